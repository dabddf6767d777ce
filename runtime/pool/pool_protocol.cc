#include "runtime/pool/pool_protocol.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/json_integers.h"
#include "runtime/run/runtime_dir.h"

namespace corral::runtime {

namespace {

nlohmann::json StreamToJson(const StreamOutcome& s) {
  return {{"text", s.text}, {"bytes", s.bytes}, {"dropped_bytes", s.dropped_bytes}};
}

StreamOutcome StreamFromJson(const nlohmann::json& j) {
  StreamOutcome s;
  j.at("text").get_to(s.text);
  GetInteger(j, "bytes", &s.bytes);
  GetInteger(j, "dropped_bytes", &s.dropped_bytes);
  return s;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::optional<T> Optional(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  T v;
  GetInteger(j, key, &v);
  return v;
}

}  // namespace

std::string OutcomeToWire(const RunOutcome& o) {
  nlohmann::json j = {
      {"status", static_cast<int>(o.status)},
      {"exit_code", o.exit_code},
      {"signal", OrNull(o.signal)},
      {"limit", o.limit ? nlohmann::json(static_cast<int>(*o.limit)) : nlohmann::json(nullptr)},
      {"wall_ms", o.wall_ms},
      {"cpu_user_ms", o.cpu_user_ms},
      {"cpu_system_ms", o.cpu_system_ms},
      {"memory_peak_bytes", OrNull(o.memory_peak_bytes)},
      {"pids_peak", OrNull(o.pids_peak)},
      {"captured", o.captured},
      {"stdout", StreamToJson(o.stdout_stream)},
      {"stderr", StreamToJson(o.stderr_stream)},
      {"interrupted_by", OrNull(o.interrupted_by)},
      {"pooled", o.pooled},
      {"warnings", o.warnings},
      {"unwritable_mounts", o.unwritable_mounts}};
  // An allow-list jail's proxy summary (runtime/netproxy/proxy_summary.h), as its JSON text.
  if (!o.network_json.empty()) j["network"] = o.network_json;
  if (o.landlock) {
    j["landlock"] = {{"enforced", o.landlock->enforced},
                     {"abi", o.landlock->abi},
                     {"tcp", o.landlock->tcp},
                     {"reason", o.landlock->reason}};
  }
  if (o.setup_error) {
    j["setup_error"] = {{"step", static_cast<uint32_t>(o.setup_error->step)},
                        {"err", o.setup_error->err},
                        {"message", o.setup_error->message}};
  } else {
    j["setup_error"] = nullptr;
  }
  try {
    return j.dump();
  } catch (const nlohmann::json::type_error&) {
    // Captured output is bytes and JSON strings must be UTF-8: binary output travels as
    // a byte array instead.
    for (auto [key, stream] :
         {std::pair{"stdout", &o.stdout_stream}, {"stderr", &o.stderr_stream}}) {
      j[key]["text"] = nullptr;
      j[key]["raw"] = std::vector<uint8_t>(stream->text.begin(), stream->text.end());
    }
    return j.dump();
  }
}

Result<RunOutcome> OutcomeFromWire(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    RunOutcome o;
    int status;
    GetInteger(j, "status", &status);
    if (status < 0 || status > static_cast<int>(RunStatus::kSetupFailed)) {
      return Error(ErrorCode::kIo, "pool reply: unknown status");
    }
    o.status = static_cast<RunStatus>(status);
    GetInteger(j, "exit_code", &o.exit_code);
    o.signal = Optional<int>(j, "signal");
    if (auto limit = Optional<int>(j, "limit")) {
      if (*limit < 0 || *limit > static_cast<int>(LimitKind::kFileSize)) {
        return Error(ErrorCode::kIo, "pool reply: unknown limit");
      }
      o.limit = static_cast<LimitKind>(*limit);
    }
    j.at("wall_ms").get_to(o.wall_ms);
    j.at("cpu_user_ms").get_to(o.cpu_user_ms);
    j.at("cpu_system_ms").get_to(o.cpu_system_ms);
    o.memory_peak_bytes = Optional<int64_t>(j, "memory_peak_bytes");
    o.pids_peak = Optional<int64_t>(j, "pids_peak");
    j.at("captured").get_to(o.captured);
    for (auto [key, stream] :
         {std::pair{"stdout", &o.stdout_stream}, {"stderr", &o.stderr_stream}}) {
      const nlohmann::json& s = j.at(key);
      if (s.at("text").is_null()) {
        std::vector<uint8_t> raw;
        for (const nlohmann::json& byte : s.at("raw")) {
          if (!byte.is_number_unsigned() || byte.get<uint64_t>() > 255) {
            throw nlohmann::json::type_error::create(302, std::string(key) + ".raw: expected bytes",
                                                     nullptr);
          }
          raw.push_back(static_cast<uint8_t>(byte.get<uint64_t>()));
        }
        nlohmann::json copy = s;
        copy["text"] = "";
        *stream = StreamFromJson(copy);
        stream->text.assign(raw.begin(), raw.end());
      } else {
        *stream = StreamFromJson(s);
      }
    }
    o.interrupted_by = Optional<int>(j, "interrupted_by");
    j.at("pooled").get_to(o.pooled);
    j.at("warnings").get_to(o.warnings);
    GetInteger(j, "unwritable_mounts", &o.unwritable_mounts);
    if (j.contains("network")) j.at("network").get_to(o.network_json);
    if (j.contains("landlock")) {
      const nlohmann::json& l = j.at("landlock");
      LandlockOutcome landlock;
      l.at("enforced").get_to(landlock.enforced);
      GetInteger(l, "abi", &landlock.abi);
      l.at("tcp").get_to(landlock.tcp);
      l.at("reason").get_to(landlock.reason);
      o.landlock = landlock;
    }
    if (!j.at("setup_error").is_null()) {
      const nlohmann::json& e = j.at("setup_error");
      uint32_t step;
      int err;
      GetInteger(e, "step", &step);
      GetInteger(e, "err", &err);
      o.setup_error = jail::SetupFailure{static_cast<jail::SetupStep>(step), err,
                                         e.at("message").get<std::string>()};
    }
    return o;
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kIo, std::string("pool reply: ") + e.what());
  }
}

std::string DefaultPoolSocket() { return RuntimeDir() + "/pool.sock"; }

}  // namespace corral::runtime
