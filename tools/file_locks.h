// Process-wide locks per (sandbox id, path), held by write_file and str_replace so two
// concurrent edits of one file cannot lose an update (DeerFlow's file_operation_lock).
// Entries disappear when no caller holds them. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>

namespace corral::tools {

std::shared_ptr<std::mutex> FileLock(const std::string& sandbox_id, const std::string& path);

}  // namespace corral::tools
