// v1/file/*: read, write, list, find, grep, search, download. Every path goes through the
// jail provider (tools/providers/jail_sandbox.h): resolved inside the sandbox's root as
// the sandbox user. Validation happens on the caller's thread (a 422 needs no sandbox);
// the operation itself on the file worker pool.
#include <algorithm>
#include <boost/beast/core/detail/base64.hpp>
#include <functional>

#include "base/json_input.h"
#include "runtime/sandboxes/persistent.h"
#include "server/aio/internal.h"
#include "server/http/content_disposition.h"
#include "tools/providers/jail_sandbox.h"
#include "tools/providers/sandbox_search.h"

namespace corral::server {
namespace {

using aio::FileFail;
using aio::Ok;
using nlohmann::json;
using runtime::SandboxErrc;
using runtime::SandboxError;

using SandboxFn = std::function<HttpResponse(runtime::JailSandbox&)>;

// Runs `fn` against the sandbox on the pool; a sandbox that is gone is a file error of
// `operation` on `path` (the envelope, HTTP 200).
void WithSandbox(aio::WorkPool& pool, const AioSandboxRef& ref, std::string path,
                 std::string operation, SandboxFn fn, Reply reply) {
  pool.Post([ref, path = std::move(path), operation = std::move(operation), fn = std::move(fn),
             reply = std::move(reply)] {
    auto hold = runtime::HoldSandbox(ref.corral_name);
    if (!hold) {
      reply(
          FileFail({SandboxErrc::kUnavailable, "the sandbox is not running", 0}, path, operation));
      return;
    }
    runtime::JailSandbox sandbox(std::move(*hold));
    reply(fn(sandbox));
  });
}

bool IsBase64(const std::string& s) {
  size_t n = s.size();
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) --n;
  if (n % 4 != 0) return false;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/' || (c == '=' && i >= n - 2);
    if (!ok) return false;
  }
  return !(n >= 2 && s[n - 2] == '=' && s[n - 1] != '=');
}

std::string DecodeBase64(const std::string& s) {
  namespace b64 = boost::beast::detail::base64;
  std::string out(b64::decoded_size(s.size()), '\0');
  auto [written, read] = b64::decode(out.data(), s.data(), s.size());
  (void)read;
  out.resize(written);
  return out;
}

// "1M", "500K", "2G", "1048576" -> bytes.
std::optional<int64_t> ParseSize(const std::string& s) {
  if (s.empty()) return std::nullopt;
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  int64_t v = std::stoll(s.substr(0, digits));
  std::string unit = s.substr(digits);
  if (unit.empty() || unit == "B" || unit == "b") return v;
  if (unit == "K" || unit == "k" || unit == "KB") return v << 10;
  if (unit == "M" || unit == "m" || unit == "MB") return v << 20;
  if (unit == "G" || unit == "g" || unit == "GB") return v << 30;
  return std::nullopt;
}

std::string Basename(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Permissions(uint32_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%o", mode & 07777);
  return buf;
}

// Path of `p` below `root` ("a/b" for root "/x" and p "/x/a/b").
std::string Below(const std::string& root, const std::string& p) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  if (r == "/") return p.substr(1);
  return p.size() > r.size() ? p.substr(r.size() + 1) : "";
}

bool HiddenBelow(const std::string& rel) {
  size_t start = 0;
  while (start < rel.size()) {
    if (rel[start] == '.') return true;
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return false;
}

std::optional<std::vector<std::string>> StringList(aio::Fields& f, const nlohmann::json& body,
                                                   const std::string& name) {
  if (!body.is_object() || !body.contains(name) || body[name].is_null()) return std::nullopt;
  const auto& v = body[name];
  if (!v.is_array()) {
    f.Invalid(name, "list_type", "Input should be a valid list");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& e : v) {
    if (!e.is_string() || e.get<std::string>().find('\0') != std::string::npos) {
      f.Invalid(name, "string_type", "Input should be a list of strings without NUL bytes");
      return std::nullopt;
    }
    out.push_back(e.get<std::string>());
  }
  return out;
}

// The body's document, or null; called after Fields has refused a body it cannot read.
json ParsedBody(const std::string& body) {
  json j = ParseJsonInputOrDiscarded(body, kHttpBodyJsonLimits);
  return j.is_discarded() ? json() : j;
}

HttpResponse DownloadError(const SandboxError& e) {
  int status = 500;
  switch (e.code) {
    case SandboxErrc::kNotFound:
      status = 404;
      break;
    case SandboxErrc::kPermissionDenied:
    case SandboxErrc::kPathEscape:
      status = 403;
      break;
    case SandboxErrc::kIsDirectory:
    case SandboxErrc::kNotDirectory:
    case SandboxErrc::kInvalidArgument:
      status = 400;
      break;
    case SandboxErrc::kTooLarge:
      status = 413;
      break;
    case SandboxErrc::kUnavailable:
      status = 503;
      break;
    default:
      break;
  }
  return HttpResponse::Json(status, {{"detail", e.message}});
}

// What v1/file/list was asked to show of the entries it found.
struct ListView {
  std::string root;
  bool hidden = false;  // show_hidden: names starting with '.' below root too
  std::optional<std::vector<std::string>> types;  // file_types: extensions kept (files only)
  std::string sort_by;                            // name | size | modified | modified_time
  bool desc = false;
};

// The extension of a file's name (".txt"), "" for a directory or a name without one.
std::string Extension(const runtime::FileEntry& e) {
  std::string name = Basename(e.path);
  size_t dot = name.rfind('.');
  return !e.is_dir && dot != std::string::npos && dot > 0 ? name.substr(dot) : "";
}

// ListEntries' result filtered and sorted as asked, in AIO's ListFilesResult shape.
json ListJson(const ListView& view, const std::vector<runtime::FileEntry>& entries) {
  std::vector<runtime::FileEntry> kept;
  for (const auto& e : entries) {
    if (!view.hidden && HiddenBelow(Below(view.root, e.path))) continue;
    if (view.types && !e.is_dir) {
      const std::string ext = Extension(e);
      bool match = false;
      for (const auto& t : *view.types) match = match || t == ext || "." + t == ext;
      if (!match) continue;
    }
    kept.push_back(e);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const auto& a, const auto& b) {
    if (view.sort_by == "size") return a.size < b.size;
    if (view.sort_by == "modified" || view.sort_by == "modified_time") return a.mtime < b.mtime;
    return a.path < b.path;
  });
  if (view.desc) std::reverse(kept.begin(), kept.end());
  json list = json::array();
  size_t dirs = 0;
  for (const auto& e : kept) {
    const std::string ext = Extension(e);
    const auto mtime = std::chrono::system_clock::time_point(std::chrono::seconds(e.mtime));
    list.push_back({{"name", Basename(e.path)},
                    {"path", e.path},
                    {"is_directory", e.is_dir},
                    {"size", e.size},
                    {"modified_time", aio::IsoTime(mtime)},
                    {"permissions", Permissions(e.mode)},
                    {"extension", ext.empty() ? json(nullptr) : json(ext)}});
    dirs += e.is_dir ? 1 : 0;
  }
  return {{"path", view.root},
          {"files", list},
          {"total_count", kept.size()},
          {"directory_count", dirs},
          {"file_count", kept.size() - dirs}};
}

}  // namespace

void AioApi::Impl::FileDownload(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  const std::string* path = request.Query("path");
  if (path == nullptr || path->find('\0') != std::string::npos) {
    return reply(HttpResponse::Json(
        422, {{"detail",
               {{{"type", path == nullptr ? "missing" : "value_error"},
                 {"loc", {"query", "path"}},
                 {"msg", path == nullptr ? "Field required" : "must not contain a NUL byte"},
                 {"input", nullptr}}}}}));
  }
  std::string p = *path;
  files.Post([ref, p, reply = std::move(reply)] {
    auto hold = runtime::HoldSandbox(ref.corral_name);
    if (!hold) return reply(HttpResponse::Json(503, {{"detail", "the sandbox is not running"}}));
    runtime::JailSandbox sandbox(std::move(*hold));
    auto bytes = sandbox.DownloadFile(p);
    if (!bytes) return reply(DownloadError(bytes.error()));
    HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = std::move(*bytes);
    r.headers.emplace_back("Content-Disposition", AttachmentDisposition(Basename(p)));
    reply(std::move(r));
  });
}

void AioApi::Impl::FileRead(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  auto file = f.String("file", true);
  auto start = f.Integer("start_line");
  auto end = f.Integer("end_line");
  if (start && *start < 0)
    f.Invalid("start_line", "greater_than_equal", "Input should be greater than or equal to 0");
  if (end && *end < 0)
    f.Invalid("end_line", "greater_than_equal", "Input should be greater than or equal to 0");
  if (!f.ok()) return reply(f.Error());
  // AIO: start_line 0-based inclusive, end_line exclusive = ReadFile's 1-based inclusive.
  std::optional<int> first, last;
  if (start) first = static_cast<int>(std::min<int64_t>(*start, 1 << 30)) + 1;
  if (end) last = static_cast<int>(std::min<int64_t>(*end, 1 << 30));
  std::string path = *file;
  return WithSandbox(
      files, ref, path, "read",
      [path, first, last](runtime::JailSandbox& sb) {
        if (first && last && *last < *first) return Ok(json{{"content", ""}, {"file", path}});
        auto text = sb.ReadFile(path, first, last);
        if (!text) return FileFail(text.error(), path, "read");
        return Ok(json{{"content", *text}, {"file", path}});
      },
      std::move(reply));
}

void AioApi::Impl::FileWrite(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  auto file = f.String("file", true);
  auto content = f.String("content", true, /*allow_nul=*/true);
  auto encoding = f.String("encoding");
  auto append = f.Bool("append");
  auto leading = f.Bool("leading_newline");
  auto trailing = f.Bool("trailing_newline");
  (void)f.Bool("sudo");
  std::string enc = encoding.value_or("utf-8");
  if (enc != "utf-8" && enc != "utf8" && enc != "base64") {
    f.Invalid("encoding", "enum", "Input should be 'utf-8' or 'base64'");
  }
  if (!f.ok()) return reply(f.Error());
  std::string path = *file;
  std::string data = *content;
  if (enc == "base64") {
    if (!IsBase64(data)) {
      return reply(
          FileFail({SandboxErrc::kBinary, "content is not valid base64", 0}, path, "write"));
    }
    data = DecodeBase64(data);
  }
  if (leading.value_or(false)) data = "\n" + data;
  if (trailing.value_or(false)) data += "\n";
  bool app = append.value_or(false);
  return WithSandbox(
      files, ref, path, "write",
      [path, data = std::move(data), app](runtime::JailSandbox& sb) {
        auto st = sb.WriteFile(path, data, app);
        if (!st) return FileFail(st.error(), path, "write");
        return Ok(json{{"file", path}, {"bytes_written", data.size()}});
      },
      std::move(reply));
}

void AioApi::Impl::FileList(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  auto path = f.String("path", true);
  bool recursive = f.Bool("recursive").value_or(false);
  bool hidden = f.Bool("show_hidden").value_or(false);
  auto depth = f.Integer("max_depth");
  auto sort_by = f.String("sort_by");
  bool desc = f.Bool("sort_desc").value_or(false);
  auto types = StringList(f, ParsedBody(request.body), "file_types");
  (void)f.Bool("include_size");
  (void)f.Bool("include_permissions");
  if (depth && *depth < 1)
    f.Invalid("max_depth", "greater_than_equal", "Input should be greater than or equal to 1");
  if (!f.ok()) return reply(f.Error());
  int max_depth =
      recursive ? static_cast<int>(std::min<int64_t>(depth.value_or(1 << 20), 1 << 20)) : 1;
  std::string root = *path;
  ListView view{root, hidden, types, sort_by.value_or("name"), desc};
  return WithSandbox(
      files, ref, root, "list",
      [view, max_depth](runtime::JailSandbox& sb) {
        auto entries = sb.ListEntries(view.root, max_depth);
        if (!entries) return FileFail(entries.error(), view.root, "list");
        return Ok(ListJson(view, *entries));
      },
      std::move(reply));
}

void AioApi::Impl::FileFind(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  auto path = f.String("path", true);
  auto glob = f.String("glob", true);
  if (!f.ok()) return reply(f.Error());
  std::string root = *path, pattern = *glob;
  return WithSandbox(
      files, ref, root, "find",
      [root, pattern](runtime::JailSandbox& sb) {
        auto r = sb.Glob(root, pattern, /*include_dirs=*/false, 10000);
        if (!r) return FileFail(r.error(), root, "find");
        return Ok(json{{"path", root}, {"files", r->matches}});
      },
      std::move(reply));
}

void AioApi::Impl::FileGrep(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  json body = ParsedBody(request.body);
  auto path = f.String("path", true);
  auto pattern = f.String("pattern", true);
  auto include = StringList(f, body, "include");
  auto exclude = StringList(f, body, "exclude");
  bool ci = f.Bool("case_insensitive").value_or(false);
  bool fixed = f.Bool("fixed_strings").value_or(false);
  auto max_results = f.Integer("max_results");
  auto max_file_size = f.String("max_file_size");
  bool recursive = f.Bool("recursive").value_or(true);
  (void)f.Bool("multiline");
  (void)f.Integer("context_before");
  (void)f.Integer("context_after");
  if (max_results && (*max_results < 1 || *max_results > 10000)) {
    f.Invalid("max_results", "less_than_equal", "Input should be between 1 and 10000");
  }
  if (max_file_size && !ParseSize(*max_file_size)) {
    f.Invalid("max_file_size", "value_error", "Value error, a size such as 1M, 500K or 1048576");
  }
  if (!f.ok()) return reply(f.Error());
  runtime::GrepOptions opts;
  opts.literal = fixed;
  opts.case_sensitive = !ci;
  opts.max_results = static_cast<int>(max_results.value_or(100));
  // AIO's max_file_size: larger files are skipped. The per-call byte budget
  // (kGrepMaxBytesScanned) still bounds what a call reads in all.
  if (max_file_size) opts.max_file_bytes = *ParseSize(*max_file_size);
  if (include && include->size() == 1) opts.glob = include->front();
  std::string root = *path, pat = *pattern;
  auto includes = include.value_or(std::vector<std::string>{});
  auto excludes = exclude.value_or(std::vector<std::string>{});
  return WithSandbox(
      files, ref, root, "grep",
      [=](runtime::JailSandbox& sb) {
        runtime::GrepOptions o = opts;
        if (includes.size() > 1 || !excludes.empty() || !recursive)
          o.max_results = 10000;  // filtered below
        auto r = sb.Grep(root, pat, o);
        if (!r) return FileFail(r.error(), root, "grep");
        json matches = json::array();
        std::set<std::string> files_matched;
        bool truncated = r->truncated || r->stopped_by.has_value();
        for (const auto& m : r->matches) {
          std::string rel = Below(root, m.path);
          if (rel.empty()) rel = Basename(m.path);
          bool in = includes.size() <= 1;
          for (const auto& g : includes) in = in || runtime::GlobMatches(g, rel);
          bool out = false;
          for (const auto& g : excludes) out = out || runtime::GlobMatches(g, rel);
          if (!in || out) continue;
          if (!recursive && rel.find('/') != std::string::npos) continue;  // files right in `path`
          if (static_cast<int>(matches.size()) >= opts.max_results) {
            truncated = true;
            break;
          }
          files_matched.insert(m.path);
          matches.push_back(
              {{"file", m.path}, {"line_number", m.line_number}, {"line_content", m.line}});
        }
        auto resp = Ok(json{{"path", root},
                            {"pattern", pat},
                            {"matches", matches},
                            {"match_count", matches.size()},
                            {"files_searched", nullptr},
                            {"files_matched", files_matched.size()},
                            {"truncated", truncated}});
        return resp;
      },
      std::move(reply));
}

void AioApi::Impl::FileSearch(Call& call, Reply reply) {
  const AioSandboxRef& ref = call.ref;
  const HttpRequest& request = call.request;
  aio::Fields f(request.body);
  auto file = f.String("file", true);
  auto regex = f.String("regex", true);
  (void)f.Bool("sudo");
  if (!f.ok()) return reply(f.Error());
  std::string path = *file, pat = *regex;
  return WithSandbox(
      files, ref, path, "search",
      [path, pat](runtime::JailSandbox& sb) {
        runtime::GrepOptions o;
        o.case_sensitive = true;
        o.max_results = 10000;
        auto r = sb.Grep(path, pat, o);
        if (!r) return FileFail(r.error(), path, "search");
        json lines = json::array(), numbers = json::array();
        for (const auto& m : r->matches) {
          lines.push_back(m.line);
          numbers.push_back(m.line_number);
        }
        return Ok(json{{"file", path}, {"matches", lines}, {"line_numbers", numbers}});
      },
      std::move(reply));
}

}  // namespace corral::server
