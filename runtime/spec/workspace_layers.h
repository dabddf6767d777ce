// Where an overlaid workspace's layers are (JailSpec::workspace_overlay): its upper layer
// and overlayfs's work directory in <state>/overlays/<name>, and the read-only layers below
// them, the host's workspace last. Shared by the mount (runtime/run/root_layout.cc), the
// review (runtime/sandboxes/workspace_overlay.h) and snapshots (runtime/snapshots/).
#pragma once

#include <string>
#include <vector>

#include "runtime/spec/spec.h"

namespace corral::runtime {

// "upper", or "upper-<id>" after a snapshot.
inline std::string WorkspaceUpperName(const JailSpec& spec) {
  return spec.workspace_upper.empty() ? "upper" : spec.workspace_upper;
}
// The work directory that goes with upper layer `upper_name`: "work", "work-<id>".
inline std::string WorkspaceWorkName(const std::string& upper_name) {
  return "work" + upper_name.substr(std::string("upper").size());
}
inline std::string WorkspaceUpperDir(const JailSpec& spec) {
  return spec.workspace_overlay_dir + "/" + WorkspaceUpperName(spec);
}
inline std::string WorkspaceWorkDir(const JailSpec& spec) {
  return spec.workspace_overlay_dir + "/" + WorkspaceWorkName(WorkspaceUpperName(spec));
}
// The host's workspace: the bottom layer, written only by a commit.
inline std::string WorkspaceHostDir(const JailSpec& spec) {
  return spec.user_data_dir.value_or("") + "/workspace";
}
// Every read-only layer, topmost first: the snapshots', then the host's workspace.
inline std::vector<std::string> WorkspaceLowerDirs(const JailSpec& spec) {
  std::vector<std::string> out = spec.workspace_layers;
  out.push_back(WorkspaceHostDir(spec));
  return out;
}

// The layers the sandbox wrote (its upper layer) or inherited (its snapshots), topmost
// first: where anything that differs from the host's workspace is.
inline std::vector<std::string> WorkspaceUpperAndSnapshotDirs(const JailSpec& spec) {
  std::vector<std::string> out = {WorkspaceUpperDir(spec)};
  out.insert(out.end(), spec.workspace_layers.begin(), spec.workspace_layers.end());
  return out;
}

// An extended attribute on each upper layer's directory naming it ("upper", "upper-<id>"):
// the overlay's root shows it, so corral can tell which upper layer a sandbox has mounted
// (a snapshot cut short). trusted.*: nothing in the sandbox can read or set it.
inline constexpr const char* kWorkspaceUpperXattr = "trusted.corral.upper";

}  // namespace corral::runtime
