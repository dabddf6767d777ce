// `corral check`: turns a probed HostInfo into a verdict (can a spec run here, what will be
// enforced, what is refused and which opt-out would allow it) and into the human and JSON
// reports. Pure functions of their inputs: nothing here probes the host.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/host/host_info.h"
#include "runtime/spec/spec.h"

namespace corral::runtime {

// One line of the report. status is "ok", "MISSING" (the host lacks it), "warn" (present
// but weaker than corral would like) or "info".
struct CheckItem {
  std::string status;
  std::string text;
};

struct CheckVerdict {
  bool can_run = false;               // `corral run` with this spec is not refused here
  std::vector<std::string> enforced;  // what a run will enforce
  std::vector<std::string> refusals;  // why a run is refused, with the opt-out if one exists
  std::vector<std::string> warnings;  // allowed, but weaker than the spec asked for
};

// What the host offers, one item per probed feature, in report order.
std::vector<CheckItem> CheckItems(const HostInfo& host);

// What `corral run` will do with `spec` on this host. The spec's argv is not looked at.
CheckVerdict EvaluateHost(const HostInfo& host, const JailSpec& spec);

// The text `corral check` prints: a header line, the items ("  ok    pid namespace"),
// then the verdict for `spec`, which the verdict calls `what`.
std::string FormatCheckReport(const HostInfo& host, const JailSpec& spec = JailSpec{},
                              const std::string& what = "the default config");

// The same for `corral check --json`: the raw probe results, the items and the verdict for
// `spec` (verdict.can_run), plus whether the default config can run
// (verdict.can_run_default_config).
nlohmann::json CheckReportJson(const HostInfo& host, const JailSpec& spec = JailSpec{});

}  // namespace corral::runtime
