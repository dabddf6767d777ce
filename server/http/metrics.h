// GET /metrics in the Prometheus text format (version 0.0.4): calls by route template and
// status, a call-latency histogram, and gauges the daemon fills in at scrape time
// (sandboxes, calls and connections in flight, AIO shell sessions). Route templates only
// ("/sandboxes/{id}/{token}/v1/shell/exec"): never a token, never an id. Thread-safe.
#pragma once

#include <array>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace corral::server {

class Metrics {
 public:
  void Record(const std::string& method, const std::string& route, int status, double seconds);

  // `gauges`: (name with labels, value), e.g. {"corral_sandboxes{state=\"running\"}", 3};
  // `help`: (metric name, "# HELP/TYPE" text) lines written before them.
  std::string Render(const std::vector<std::pair<std::string, double>>& gauges,
                     const std::vector<std::string>& help) const;

  static constexpr std::array<double, 12> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1,    5,     30};

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, uint64_t> calls_;  // method, route, status
  std::map<std::string, std::array<uint64_t, kBuckets.size() + 1>> buckets_;  // route
  std::map<std::string, double> sums_;                                        // route
};

}  // namespace corral::server
