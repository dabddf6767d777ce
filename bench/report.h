// Report writers for a BenchResults: the text table printed on stdout, bench.json (every
// figure and every raw sample) and bench.svg (median latency per launcher, one panel per
// workload). Pure functions of the results, so they are unit-tested on made-up data.
#pragma once

#include <string>

#include "base/result.h"
#include "bench/results.h"

namespace corral::bench {

std::string FormatTable(const BenchResults& r);
std::string ToJson(const BenchResults& r);
std::string ToSvg(const BenchResults& r);

// Writes <dir>/bench.json and <dir>/bench.svg (creating dir if needed).
Status WriteReports(const BenchResults& r, const std::string& dir);

}  // namespace corral::bench
