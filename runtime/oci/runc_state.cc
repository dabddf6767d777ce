#include "runtime/oci/runc_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/files.h"

namespace corral::runtime::oci {

const char* ContainerStatusName(ContainerStatus status) {
  switch (status) {
    case ContainerStatus::kCreated:
      return "created";
    case ContainerStatus::kRunning:
      return "running";
    case ContainerStatus::kPaused:
      return "paused";
    case ContainerStatus::kStopped:
      return "stopped";
  }
  return "unknown";
}

Status CheckContainerId(const std::string& id) {
  if (id.empty() || id.size() > 1024 || id == "." || id == "..") {
    return Error(ErrorCode::kInvalidArgument, "invalid container id \"" + id + "\"");
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '+' || c == '.' || c == '-';
    if (!ok) {
      return Error(ErrorCode::kInvalidArgument,
                   "invalid container id \"" + id + "\": only A-Z a-z 0-9 _ + . - may appear");
    }
  }
  return Ok();
}

namespace {

Result<UniqueFd> LockDirFd(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error::FromErrno(errno, dir);
  if (::flock(fd.get(), LOCK_EX) != 0) return Error::FromErrno(errno, "flock " + dir);
  return fd;
}

}  // namespace

Result<UniqueFd> ContainerStore::CreateDir(const std::string& id) {
  RETURN_IF_ERROR(CheckContainerId(id));
  std::error_code ec;
  std::filesystem::create_directories(root_, ec);
  if (ec) return Error(ErrorCode::kIo, "creating the state root " + root_ + ": " + ec.message());
  ::chmod(root_.c_str(), 0700);
  if (::mkdir(Dir(id).c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return Error(ErrorCode::kAlreadyExists, "container with id exists: " + id);
    }
    return Error::FromErrno(errno, "mkdir " + Dir(id));
  }
  return LockDirFd(Dir(id));
}

Result<UniqueFd> ContainerStore::Lock(const std::string& id) {
  RETURN_IF_ERROR(CheckContainerId(id));
  struct stat st;
  if (::stat((Dir(id) + "/state.json").c_str(), &st) != 0) {
    return Error(ErrorCode::kNotFound, "container does not exist: " + id);
  }
  return LockDirFd(Dir(id));
}

Status ContainerStore::Save(const ContainerRecord& record) {
  nlohmann::json doc = {{"id", record.id},
                        {"pid", record.pid},
                        {"pid_start_time", record.pid_start_time},
                        {"bundle", record.bundle},
                        {"rootfs", record.rootfs},
                        {"created", record.created},
                        {"cgroups_path", record.cgroups_path},
                        {"started", record.started},
                        {"annotations", record.annotations}};
  return WriteFileWhole(Dir(record.id) + "/state.json", doc.dump(2) + "\n", 0600);
}

Result<ContainerRecord> ContainerStore::Load(const std::string& id) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(Dir(id) + "/state.json"));
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    ContainerRecord record;
    record.id = doc.at("id").get<std::string>();
    record.pid = doc.at("pid").get<pid_t>();
    record.pid_start_time = doc.at("pid_start_time").get<unsigned long long>();
    record.bundle = doc.at("bundle").get<std::string>();
    record.rootfs = doc.at("rootfs").get<std::string>();
    record.created = doc.at("created").get<std::string>();
    record.cgroups_path = doc.at("cgroups_path").get<std::string>();
    record.started = doc.at("started").get<bool>();
    record.annotations = doc.at("annotations").get<std::map<std::string, std::string>>();
    return record;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, Dir(id) + "/state.json is damaged: " + e.what());
  }
}

Status ContainerStore::Remove(const std::string& id) {
  std::error_code ec;
  std::filesystem::remove_all(Dir(id), ec);
  if (ec) return Error(ErrorCode::kIo, "removing " + Dir(id) + ": " + ec.message());
  return Ok();
}

unsigned long long ProcessStartTime(pid_t pid) {
  if (pid <= 0) return 0;
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  size_t close = stat->rfind(')');
  if (close == std::string::npos || close + 2 >= stat->size()) return 0;
  if ((*stat)[close + 2] == 'Z' || (*stat)[close + 2] == 'X') return 0;
  size_t pos = close + 2;
  for (int field = 3; field < 22; ++field) {
    pos = stat->find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  return std::strtoull(stat->c_str() + pos, nullptr, 10);
}

ContainerStatus ReadStatus(const ContainerRecord& record, const cgroups::Cgroup* cgroup) {
  if (record.pid <= 0 || ProcessStartTime(record.pid) != record.pid_start_time) {
    return ContainerStatus::kStopped;
  }
  if (cgroup != nullptr) {
    Result<bool> frozen = cgroup->Frozen();
    if (frozen && *frozen) return ContainerStatus::kPaused;
  }
  return record.started ? ContainerStatus::kRunning : ContainerStatus::kCreated;
}

std::string StateJson(const ContainerRecord& record, ContainerStatus status) {
  nlohmann::json doc = {{"ociVersion", "1.1.0"},
                        {"id", record.id},
                        {"pid", status == ContainerStatus::kStopped ? 0 : record.pid},
                        {"status", ContainerStatusName(status)},
                        {"bundle", record.bundle},
                        {"rootfs", record.rootfs},
                        {"created", record.created},
                        {"owner", ""}};
  if (!record.annotations.empty()) doc["annotations"] = record.annotations;
  return doc.dump(2);
}

namespace {

// "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" (the root slice) -> "".
Result<std::string> ExpandSlice(const std::string& slice) {
  if (slice == "-.slice") return std::string();
  const std::string suffix = ".slice";
  if (slice.size() <= suffix.size() || !slice.ends_with(suffix) ||
      slice.find('/') != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument,
                 "linux.cgroupsPath: \"" + slice + "\" is not a systemd slice name");
  }
  const std::string stem = slice.substr(0, slice.size() - suffix.size());
  std::string path;
  size_t dash = 0;
  while ((dash = stem.find('-', dash)) != std::string::npos) {
    if (dash == 0 || dash + 1 == stem.size() || stem[dash + 1] == '-') {
      return Error(ErrorCode::kInvalidArgument,
                   "linux.cgroupsPath: \"" + slice + "\" is not a systemd slice name");
    }
    path += "/" + stem.substr(0, dash) + suffix;
    ++dash;
  }
  return path + "/" + slice;
}

}  // namespace

Result<std::string> CgroupfsPath(const std::string& cgroups_path, bool systemd,
                                 const std::string& id) {
  if (cgroups_path.empty()) return "/corral-runc/" + id;
  if (!systemd) {
    if (cgroups_path.find("..") != std::string::npos) {
      return Error(ErrorCode::kInvalidArgument, "linux.cgroupsPath: \"..\" is not allowed");
    }
    return cgroups_path.front() == '/' ? cgroups_path : "/" + cgroups_path;
  }
  const size_t first = cgroups_path.find(':');
  const size_t second = first == std::string::npos ? first : cgroups_path.find(':', first + 1);
  if (second == std::string::npos || cgroups_path.find(':', second + 1) != std::string::npos) {
    return Error(ErrorCode::kInvalidArgument, "linux.cgroupsPath: \"" + cgroups_path +
                                                  "\" is not slice:prefix:name (--systemd-cgroup)");
  }
  std::string slice = cgroups_path.substr(0, first);
  const std::string prefix = cgroups_path.substr(first + 1, second - first - 1);
  const std::string name = cgroups_path.substr(second + 1);
  if (slice.empty()) slice = "system.slice";
  ASSIGN_OR_RETURN(std::string parent, ExpandSlice(slice));
  // A name that is a unit already (ends .slice) is used as it is, as runc does.
  const std::string unit = name.ends_with(".slice") ? name : prefix + "-" + name + ".scope";
  return parent + "/" + unit;
}

Result<ContainerCgroupRef> ContainerCgroupManager(const std::string& cgroupfs_path) {
  const size_t slash = cgroupfs_path.rfind('/');
  ContainerCgroupRef ref;
  ref.name = cgroupfs_path.substr(slash + 1);
  cgroups::ManagerOptions options;
  options.parent = slash == 0 ? "/" : cgroupfs_path.substr(0, slash);
  ASSIGN_OR_RETURN(ref.manager, cgroups::CgroupManager::Create(options));
  return ref;
}

}  // namespace corral::runtime::oci
