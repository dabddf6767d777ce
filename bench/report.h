// Report writers for a BenchResults: the text table printed on stdout, bench.json (every
// figure and every raw sample) and bench.svg (one panel per workload: median latency per
// launcher as a bar, its p10-p90 spread as a whisker, launches/s beside the throughput
// workload, one colour per kind of launcher with a legend). Pure functions of the results, so they
// are unit-tested on made-up data.
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
