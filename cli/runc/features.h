// corral-runc's `features` and `list` output (cli/runc/main.cc).
#pragma once

#include <string>

#include "runtime/oci/runc_container.h"

namespace corral::runc_cli {

// The runtime spec's "features" document: what corral-runc honours (runc_plan.h).
std::string FeaturesJson();

// `list`: a table (ID PID STATUS BUNDLE CREATED) or a JSON array of state objects.
int PrintList(const runtime::oci::GlobalOptions& global, const std::string& format, bool quiet);

}  // namespace corral::runc_cli
