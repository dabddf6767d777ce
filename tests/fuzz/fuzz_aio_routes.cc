// The AIO API's routes (server/aio/api.h) driven as the router hands them a request — the
// path below a sandbox's URL, the method, the query and the body — into a stand-in
// sandbox: a name with no record in an empty runtime directory of the fuzzer's own. Each
// route dispatches, parses and validates all it is given (JSON bodies with their depth
// bound, fields, ids, paths, query parameters), then finds no sandbox and answers without
// running anything.
// Input: "METHOD SUBPATH[?QUERY]" NUL BODY (no NUL: a POST of v1/shell/exec with the input
// as body). Invariants: exactly one answer, within 10 s, with a status of 200..599; an
// answer that says it is JSON is valid JSON.
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "server/aio/api.h"
#include "server/http/request_text.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace corral::server;

struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  HttpResponse first;
};

HttpRequest RequestOf(const std::string& input) {
  auto [line, body] = corral::fuzz::SplitAtNul(input);
  HttpRequest request;
  request.method = "POST";
  std::string target = "v1/shell/exec";
  if (!line.empty()) {
    const size_t space = line.find(' ');
    request.method = line.substr(0, space);
    target = space == std::string::npos ? "" : line.substr(space + 1);
  }
  const size_t question = target.find('?');
  request.path = PercentDecode(target.substr(0, question), false);
  if (question != std::string::npos) {
    std::string query = target.substr(question + 1);
    size_t start = 0;
    while (start <= query.size()) {
      size_t end = query.find('&', start);
      if (end == std::string::npos) end = query.size();
      std::string pair = query.substr(start, end - start);
      const size_t eq = pair.find('=');
      request.query.emplace(
          PercentDecode(pair.substr(0, eq), true),
          eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1), true));
      start = end + 1;
    }
  }
  request.headers["content-type"] = "application/json";
  request.body = std::move(body);
  request.client = "127.0.0.1";
  return request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static AioApi* api = [] {
    static char dir[] = "/tmp/corral-fuzz-aio-XXXXXX";
    if (::mkdtemp(dir) == nullptr) corral::fuzz::Fail("mkdtemp", dir);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    ::setenv("CORRAL_RUNTIME_DIR", dir, 1);  // an empty store: the stand-in has no record
    return new AioApi(AioApiOptions{});
  }();
  static const AioSandboxRef stand_in{"0123456789abcdef", "df-fuzz-stand-in"};

  HttpRequest request = RequestOf(corral::fuzz::AsString(data, size));
  const std::string subpath = request.path;
  auto answers = std::make_shared<Answers>();
  api->Handle(stand_in, subpath, std::move(request), [answers](HttpResponse response) {
    std::lock_guard<std::mutex> lock(answers->mu);
    if (++answers->count == 1) answers->first = std::move(response);
    answers->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(answers->mu);
  if (!answers->cv.wait_for(lock, std::chrono::seconds(10), [&] { return answers->count > 0; })) {
    corral::fuzz::Fail("no answer within 10 s", subpath);
  }
  const HttpResponse& response = answers->first;
  if (response.status < 200 || response.status > 599) {
    corral::fuzz::Fail("an answer with an impossible status", std::to_string(response.status));
  }
  if (!response.stream && response.content_type.rfind("application/json", 0) == 0 &&
      !nlohmann::json::accept(response.body)) {
    corral::fuzz::Fail("a JSON answer that is not JSON", response.body);
  }
  // A second answer would come at once (the routes answer on the calling thread or one
  // worker): look again after a moment.
  lock.unlock();
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  lock.lock();
  if (answers->count != 1) corral::fuzz::Fail("answered more than once", subpath);
  return 0;
}
