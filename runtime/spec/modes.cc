#include "runtime/spec/modes.h"

#include <iterator>
#include <utility>

namespace corral::runtime {
namespace {

template <typename E>
using Value = std::pair<E, std::string_view>;

// One table per mode, in the order the messages list them. kMustBe, where set, is the
// wording Validate() used before the modes were typed (kept so users see the same words);
// otherwise it is "must be " + AllowedModes<E>().
template <typename E>
struct Mode;

template <>
struct Mode<RunMode> {
  static constexpr Value<RunMode> kValues[] = {{RunMode::kProcess, "process"},
                                               {RunMode::kContainer, "container"}};
  static constexpr std::string_view kMustBe = "";
};

template <>
struct Mode<NetworkMode> {
  static constexpr Value<NetworkMode> kValues[] = {{NetworkMode::kNone, "none"},
                                                   {NetworkMode::kAllowlist, "allowlist"},
                                                   {NetworkMode::kHost, "host"}};
  static constexpr std::string_view kMustBe = "must be one of none, allowlist, host";
};

template <>
struct Mode<CgroupDriverChoice> {
  static constexpr Value<CgroupDriverChoice> kValues[] = {{CgroupDriverChoice::kAuto, "auto"},
                                                          {CgroupDriverChoice::kV1, "v1"},
                                                          {CgroupDriverChoice::kV2, "v2"}};
  static constexpr std::string_view kMustBe = "";
};

template <>
struct Mode<LandlockMode> {
  static constexpr Value<LandlockMode> kValues[] = {
      {LandlockMode::kAuto, "auto"}, {LandlockMode::kOn, "true"}, {LandlockMode::kOff, "false"}};
  static constexpr std::string_view kMustBe = "";
};

template <>
struct Mode<IdentityMode> {
  static constexpr Value<IdentityMode> kValues[] = {{IdentityMode::kAuto, "auto"},
                                                    {IdentityMode::kReserved, "reserved"},
                                                    {IdentityMode::kHostUid, "host-uid"}};
  static constexpr std::string_view kMustBe = "";
};

template <>
struct Mode<ScanMode> {
  static constexpr Value<ScanMode> kValues[] = {
      {ScanMode::kDeny, "deny"}, {ScanMode::kWarn, "warn"}, {ScanMode::kOff, "off"}};
  static constexpr std::string_view kMustBe = "";
};

template <>
struct Mode<OciRuntimeName> {
  static constexpr Value<OciRuntimeName> kValues[] = {{OciRuntimeName::kAuto, "auto"},
                                                      {OciRuntimeName::kCrun, "crun"},
                                                      {OciRuntimeName::kRunc, "runc"}};
  static constexpr std::string_view kMustBe = "must be auto, crun, runc or an absolute path";
};

template <typename E>
std::string_view NameOf(E e) {
  for (const auto& [value, name] : Mode<E>::kValues) {
    if (value == e) return name;
  }
  return "";  // only OciRuntimeName::kPath, which has no name of its own
}

// As Validate() quotes a value: cut at 80 bytes, NUL, quote and backslash escaped.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  const bool cut = s.size() > 80;
  for (char c : s.substr(0, 80)) {
    if (c == '\0') {
      out += "\\0";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out + (cut ? "...\"" : "\"");
}

template <typename E>
std::string MustBe() {
  if (!Mode<E>::kMustBe.empty()) return std::string(Mode<E>::kMustBe);
  return "must be " + AllowedModes<E>();
}

template <typename E>
std::string BadText(std::string_view text) {
  // A NUL is named first, as for every other string of a spec: the value was cut short
  // somewhere on its way, and "must be ..." would hide that.
  if (text.find('\0') != std::string_view::npos) {
    return "must not contain a NUL byte (got " + Quote(text) + ")";
  }
  return MustBe<E>() + " (got " + Quote(text) + ")";
}

}  // namespace

std::string_view Name(RunMode m) { return NameOf(m); }
std::string_view Name(NetworkMode m) { return NameOf(m); }
std::string_view Name(CgroupDriverChoice m) { return NameOf(m); }
std::string_view Name(LandlockMode m) { return NameOf(m); }
std::string_view Name(IdentityMode m) { return NameOf(m); }
std::string_view Name(ScanMode m) { return NameOf(m); }
std::string_view Name(OciRuntimeName m) { return NameOf(m); }
std::string_view Name(const OciRuntimeChoice& c) {
  return c.name == OciRuntimeName::kPath ? std::string_view(c.path) : NameOf(c.name);
}

template <typename E>
std::optional<E> ParseMode(std::string_view text) {
  for (const auto& [value, name] : Mode<E>::kValues) {
    if (name == text) return value;
  }
  return std::nullopt;
}

std::optional<OciRuntimeChoice> ParseOciRuntime(std::string_view text) {
  if (!text.empty() && text[0] == '/' && text.find('\0') == std::string_view::npos) {
    return OciRuntimeChoice{OciRuntimeName::kPath, std::string(text)};
  }
  if (auto name = ParseMode<OciRuntimeName>(text)) return OciRuntimeChoice{*name, ""};
  return std::nullopt;
}

template <typename E>
std::string AllowedModes() {
  std::string out;
  const size_t n = std::size(Mode<E>::kValues);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += Mode<E>::kValues[i].second;
  }
  return out;
}

template <typename E>
std::string BadModeText(std::string_view text) {
  return BadText<E>(text);
}

std::string BadOciRuntimeText(std::string_view text) { return BadText<OciRuntimeName>(text); }

// The modes there are; a new one adds its table above and a line here.
#define CORRAL_MODE(E)                                      \
  template std::optional<E> ParseMode<E>(std::string_view); \
  template std::string AllowedModes<E>();                   \
  template std::string BadModeText<E>(std::string_view);
CORRAL_MODE(RunMode)
CORRAL_MODE(NetworkMode)
CORRAL_MODE(CgroupDriverChoice)
CORRAL_MODE(LandlockMode)
CORRAL_MODE(IdentityMode)
CORRAL_MODE(ScanMode)
#undef CORRAL_MODE

}  // namespace corral::runtime
