#include "server/http/metrics.h"

#include <cstdio>
#include <tuple>

namespace corral::server {
namespace {

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

void Metrics::Record(const std::string& method, const std::string& route, int status,
                     double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_[{method, route, status}];
  auto& b = buckets_[route];
  size_t i = 0;
  while (i < kBuckets.size() && seconds > kBuckets[i]) ++i;
  ++b[i];
  sums_[route] += seconds;
}

std::string Metrics::Render(const std::vector<std::pair<std::string, double>>& gauges,
                            const std::vector<std::string>& help) const {
  std::string out;
  for (const std::string& h : help) out += h + "\n";
  for (const auto& [name, value] : gauges) out += name + " " + Number(value) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  out +=
      "# HELP corral_http_requests_total HTTP requests answered, by route template and status.\n";
  out += "# TYPE corral_http_requests_total counter\n";
  for (const auto& [key, n] : calls_) {
    const auto& [method, route, status] = key;
    out += "corral_http_requests_total{method=\"" + method + "\",route=\"" + route +
           "\",status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP corral_http_request_duration_seconds Time from a request read to its answer.\n";
  out += "# TYPE corral_http_request_duration_seconds histogram\n";
  for (const auto& [route, b] : buckets_) {
    uint64_t cumulative = 0;
    const std::string label = "route=\"" + route + "\"";
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      cumulative += b[i];
      out += "corral_http_request_duration_seconds_bucket{" + label + ",le=\"" +
             Number(kBuckets[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    cumulative += b[kBuckets.size()];
    out += "corral_http_request_duration_seconds_bucket{" + label + ",le=\"+Inf\"} " +
           std::to_string(cumulative) + "\n";
    out +=
        "corral_http_request_duration_seconds_sum{" + label + "} " + Number(sums_.at(route)) + "\n";
    out += "corral_http_request_duration_seconds_count{" + label + "} " +
           std::to_string(cumulative) + "\n";
  }
  return out;
}

}  // namespace corral::server
