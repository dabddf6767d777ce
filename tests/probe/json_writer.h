// JsonWriter: a tiny streaming JSON builder for the probe. The probe is static and must stay
// small, so it does not use nlohmann::json; the tests parse its output with nlohmann.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corral::probe {

// Builds one JSON text into a string. Commas are inserted automatically; the caller is
// responsible for balancing Begin/End and for calling Key() before each value in an object.
class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(long long value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  // Shorthands for Key(k) followed by a value.
  JsonWriter& Field(std::string_view key, std::string_view value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, const char* value) { return Key(key).String(value); }
  JsonWriter& Field(std::string_view key, long long value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, int value) { return Key(key).Int(value); }
  JsonWriter& Field(std::string_view key, bool value) { return Key(key).Bool(value); }
  // "errno": null when err == 0, else its name ("EROFS").
  JsonWriter& ErrnoField(std::string_view key, int err);

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  void AppendEscaped(std::string_view s);

  std::string out_;
  std::vector<bool> first_;  // one entry per open container: no element written yet
  bool after_key_ = false;
};

// "EPERM" for EPERM; "E<n>" for numbers glibc has no name for.
std::string ErrnoName(int err);
// "SIGSYS" for SIGSYS; "SIG<n>" otherwise.
std::string SignalName(int sig);

// Writes `json` and a newline to fd 1, retrying short writes. Returns false on error.
bool PrintJson(const JsonWriter& json);

}  // namespace corral::probe
