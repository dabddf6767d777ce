// Byte sizes as people write them in config files and flags ("512m", "1.5g", "256MiB").
// Pure functions; used by the config loader, the CLI and reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::runtime {

// Parses a non-negative byte count: digits with an optional fraction, an optional unit
// and optional spaces between them. Units are binary and case-insensitive: k, m, g, t, p,
// each optionally followed by "b" or "ib" ("512k", "512KiB", "512kb" are all 524288);
// a bare "b" means bytes. A fraction must come out as a whole number of bytes ("1.5g" is
// fine, "0.3k" is not). Rejects negatives, exponents, hex, garbage and values that do not
// fit in int64_t, with kInvalidArgument and a message naming the input.
Result<int64_t> ParseSize(std::string_view text);

// Human form with a binary unit: "512 MiB", "1.5 GiB", "1000 B". Exact values print as
// integers; others are rounded to two decimals with trailing zeros dropped.
std::string FormatSize(int64_t bytes);

}  // namespace corral::runtime
