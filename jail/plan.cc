#include "jail/plan.h"

namespace corral::jail {

void JailPlan::FinalizePointers() {
  argv.clear();
  for (std::string& s : argv_storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  envp.clear();
  for (std::string& s : envp_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
}

}  // namespace corral::jail
