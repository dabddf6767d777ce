#include "tests/support/test_user.h"

#include <pwd.h>

#include "base/files.h"
#include "tests/support/run_corral.h"

namespace corral::test {

namespace {

bool Lookup(TestUser* out) {
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwnam_r(kTestUserName, &pw, buf, sizeof buf, &found) != 0 || found == nullptr) {
    return false;
  }
  out->uid = pw.pw_uid;
  out->gid = pw.pw_gid;
  return true;
}

}  // namespace

Result<TestUser> EnsureTestUser() {
  TestUser user;
  if (Lookup(&user)) return user;
  ASSIGN_OR_RETURN(RunResult made, RunProgram("/usr/sbin/useradd",
                                              {"--system", "--no-create-home", "--user-group",
                                               "--shell", "/usr/sbin/nologin", kTestUserName}));
  if (!Lookup(&user)) {
    return Error(ErrorCode::kSetupFailed, "could not create the test user " +
                                              std::string(kTestUserName) + "\n" + made.Describe());
  }
  if (user.uid == 0) return Error(ErrorCode::kSetupFailed, "the test user is root");
  return user;
}

std::vector<std::string> AsTestUser(const TestUser& user, const std::string& program,
                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"--reuid=" + std::to_string(user.uid),
                                   "--regid=" + std::to_string(user.gid), "--clear-groups", "--",
                                   program};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

bool MemoryOnCgroupV2() {
  auto controllers = ReadFile("/sys/fs/cgroup/cgroup.controllers");
  return controllers && controllers->find("memory") != std::string::npos;
}

}  // namespace corral::test
