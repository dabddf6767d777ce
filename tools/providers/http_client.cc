#include "tools/providers/http_client.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <cctype>
#include <mutex>

namespace corral::runtime {

namespace {

// The libcurl entry points the client uses, resolved once.
struct CurlApi {
  CURLcode (*global_init)(long);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

template <typename F>
bool Resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

Result<const CurlApi*> LoadCurl() {
  static std::once_flag once;
  static CurlApi api;
  static std::string error;
  std::call_once(once, [] {
    void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = ::dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = ::dlerror();
      error = std::string("cannot load libcurl (install Debian's libcurl4): ") +
              (why ? why : "not found");
      return;
    }
    bool ok = Resolve(lib, "curl_global_init", &api.global_init) &&
              Resolve(lib, "curl_easy_init", &api.easy_init) &&
              Resolve(lib, "curl_easy_setopt", &api.easy_setopt) &&
              Resolve(lib, "curl_easy_perform", &api.easy_perform) &&
              Resolve(lib, "curl_easy_getinfo", &api.easy_getinfo) &&
              Resolve(lib, "curl_easy_cleanup", &api.easy_cleanup) &&
              Resolve(lib, "curl_easy_strerror", &api.easy_strerror) &&
              Resolve(lib, "curl_slist_append", &api.slist_append) &&
              Resolve(lib, "curl_slist_free_all", &api.slist_free_all);
    if (!ok) {
      error = "libcurl lacks a function corral needs";
      return;
    }
    // Once, before any thread uses a handle (curl_global_init is not thread-safe).
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) error = "curl_global_init failed";
  });
  if (!error.empty()) return Error(ErrorCode::kUnsupported, error);
  return &api;
}

struct ReplySink {
  std::string* body;
  size_t max;
  bool overflow = false;
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<ReplySink*>(user);
  size_t n = size * count;
  if (sink->body->size() + n > sink->max) {
    sink->overflow = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  sink->body->append(data, n);
  return n;
}

}  // namespace

Result<HttpReply> Perform(const HttpCall& call) {
  ASSIGN_OR_RETURN(const CurlApi* api, LoadCurl());
  CURL* h = api->easy_init();
  if (h == nullptr) return Error(ErrorCode::kIo, "curl_easy_init failed");
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : call.headers) {
    headers = api->slist_append(headers, (name + ": " + value).c_str());
  }
  HttpReply reply;
  ReplySink sink{&reply.body, call.max_reply_bytes};
  api->easy_setopt(h, CURLOPT_URL, call.url.c_str());
  api->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  api->easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(call.timeout_seconds * 1000));
  api->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  // The AIO server is addressed directly: a proxy from the environment must not see the
  // sandbox's URL (it carries the sandbox's token).
  api->easy_setopt(h, CURLOPT_PROXY, "");
  api->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  api->easy_setopt(h, CURLOPT_WRITEFUNCTION, OnData);
  api->easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  if (call.method == "POST" || !call.body.empty()) {
    api->easy_setopt(h, CURLOPT_POSTFIELDS, call.body.data());
    api->easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
  }
  if (call.method != "GET" && call.method != "POST") {
    api->easy_setopt(h, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  if (headers != nullptr) api->easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = api->easy_perform(h);
  Result<HttpReply> result = reply;
  if (sink.overflow) {
    result = Error(ErrorCode::kIo, call.method + " " + "reply larger than " +
                                       std::to_string(call.max_reply_bytes) + " bytes");
  } else if (rc != CURLE_OK) {
    result = Error(ErrorCode::kIo, std::string("HTTP request failed: ") + api->easy_strerror(rc));
  } else {
    long status = 0;
    char* type = nullptr;
    api->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    api->easy_getinfo(h, CURLINFO_CONTENT_TYPE, &type);
    reply.status = status;
    if (type != nullptr) reply.content_type = type;
    result = std::move(reply);
  }
  api->slist_free_all(headers);
  api->easy_cleanup(h);
  return result;
}

std::string UrlEscape(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace corral::runtime
