#include "cli/human_units.h"

#include <cmath>
#include <cstdio>

namespace corral::cli {

// "45s", "12min", "3.5h".
std::string Duration(double seconds) {
  char buf[32];
  if (seconds < 120) {
    std::snprintf(buf, sizeof buf, "%.0fs", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof buf, "%.0fmin", seconds / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fh", seconds / 3600);
  }
  return buf;
}

// "0.4MiB", "512MiB", "1.5GiB": one unit for every column, whole numbers without ".0".
std::string Size(int64_t bytes) {
  double value = static_cast<double>(bytes) / (1 << 20);
  const char* unit = "MiB";
  if (value >= 1024) {
    value /= 1024;
    unit = "GiB";
  }
  char buf[32];
  const bool whole = std::fabs(value - std::round(value)) < 0.05;
  std::snprintf(buf, sizeof buf, whole ? "%.0f%s" : "%.1f%s", value, unit);
  return buf;
}

}  // namespace corral::cli
