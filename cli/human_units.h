// Sizes and durations for people, the same in every table of the CLI (ps, stats, volume ls).
#pragma once

#include <cstdint>
#include <string>

namespace corral::cli {

// "45s", "12min", "3.5h".
std::string Duration(double seconds);
// "0.4MiB", "512MiB", "1.5GiB": one unit for every column, whole numbers without ".0".
std::string Size(int64_t bytes);

}  // namespace corral::cli
