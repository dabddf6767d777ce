#include "server/corral_api/stream.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <optional>

#include "base/unique_fd.h"
#include "runtime/run/outcome.h"
#include "server/corral_api/internal.h"

namespace corral::server {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// After the command's outcome, how long its pipes may stay open (a background process it
// left still holding them): what it wrote is in the pipe by then, so EOF normally comes at
// once. The supervisor bounds its own final drain the same way (runtime/run/watch.cc).
constexpr auto kDrainGrace = std::chrono::seconds(2);

std::string Event(const char* name, const std::string& data_json) {
  // data_json is one line (nlohmann's compact dump escapes every control character).
  return std::string("event: ") + name + "\ndata: " + data_json + "\n\n";
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

class ExecStream : public std::enable_shared_from_this<ExecStream> {
 public:
  ExecStream(asio::io_context& io, runtime::ExecRequest exec, int64_t cap, ExecThread exec_thread,
             std::function<void()> released)
      : strand_(asio::make_strand(io)),
        timer_(strand_),
        exec_(std::move(exec)),
        cap_(cap),
        exec_thread_(std::move(exec_thread)),
        released_(std::move(released)),
        out_("stdout", strand_),
        err_("stderr", strand_) {}
  ~ExecStream() {
    if (released_) released_();
  }

  void Start(std::shared_ptr<ResponseStream> sink) {
    asio::dispatch(strand_, [self = shared_from_this(), sink = std::move(sink)]() mutable {
      self->StartOnStrand(std::move(sink));
    });
  }
  void ClientGone() {
    asio::post(strand_, [self = shared_from_this()] {
      self->gone_ = true;
      self->interrupt_w_.Reset();  // the supervisor reads EOF as SIGHUP: it kills the exec
    });
  }

 private:
  struct Output {
    Output(const char* n, asio::strand<asio::io_context::executor_type>& s) : name(n), fd(s) {}
    const char* name;
    asio::posix::stream_descriptor fd;
    std::array<char, 16384> buf;
    std::string held;       // an incomplete UTF-8 sequence at the end of what was forwarded
    int64_t bytes = 0;      // everything the command wrote here
    int64_t forwarded = 0;  // of which sent (at most the cap)
    bool eof = false;
  };

  void StartOnStrand(std::shared_ptr<ResponseStream> sink) {
    sink_ = std::move(sink);
    if (gone_) return;
    int out[2] = {-1, -1}, err[2] = {-1, -1}, intr[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, intr) != 0) {
      const int e = errno;
      for (int fd : {out[0], out[1], err[0], err[1], intr[0], intr[1]}) {
        if (fd >= 0) ::close(fd);
      }
      return Fail(Error::FromErrno(e, "the exec's output pipes"));
    }
    out_.fd.assign(out[0]);
    err_.fd.assign(err[0]);
    out_.fd.non_blocking(true);
    err_.fd.non_blocking(true);
    interrupt_w_.Reset(intr[1]);  // a socket: the supervisor recv()s stop requests from it
    exec_.io.capture_output = false;
    exec_.io.pass_stdin = false;
    exec_.io.stdout_fd = out[1];
    exec_.io.stderr_fd = err[1];
    exec_.io.interrupt_fd = intr[0];  // also keeps corral's own signal handling out
    exec_thread_([self = shared_from_this(), exec = exec_, w_out = out[1], w_err = err[1],
                  r_intr = intr[0]]() -> std::function<void()> {
      auto outcome = runtime::ExecInSandbox(exec);
      for (int fd : {w_out, w_err, r_intr}) ::close(fd);
      return [self, outcome = std::move(outcome)]() mutable {
        asio::post(self->strand_, [self, outcome = std::move(outcome)]() mutable {
          self->OnOutcome(std::move(outcome));
        });
      };
    });
    Read(out_);
    Read(err_);
  }

  void Read(Output& o) {
    o.fd.async_read_some(asio::buffer(o.buf),
                         [self = shared_from_this(), &o](boost::system::error_code ec, size_t n) {
                           if (self->finished_) return;
                           if (n > 0) self->Forward(o, std::string_view(o.buf.data(), n));
                           if (ec) {
                             o.eof = true;
                             self->Flush(o);
                             if (self->outcome_ && self->out_.eof && self->err_.eof) self->Finish();
                             return;
                           }
                           self->Read(o);
                         });
  }

  // Counts everything; sends what fits under the cap, whole UTF-8 characters only.
  void Forward(Output& o, std::string_view bytes) {
    o.bytes += static_cast<int64_t>(bytes.size());
    const int64_t room = std::max<int64_t>(0, cap_ - o.forwarded);
    const size_t take = static_cast<size_t>(std::min<int64_t>(room, bytes.size()));
    if (take == 0) return;
    o.forwarded += static_cast<int64_t>(take);
    o.held.append(bytes.substr(0, take));
    const size_t whole = CompleteUtf8Prefix(o.held);
    if (whole == 0) return;
    Send(o.name, o.held.substr(0, whole));
    o.held.erase(0, whole);
  }
  void Flush(Output& o) {
    if (o.held.empty()) return;
    Send(o.name, o.held);  // invalid or cut bytes become U+FFFD
    o.held.clear();
  }
  void Send(const char* name, const std::string& text) {
    if (!gone_) sink_->Send(Event(name, Dump({{"text", text}})));
  }

  void OnOutcome(Result<runtime::RunOutcome> outcome) {
    outcome_ = std::move(outcome);
    if (out_.eof && err_.eof) return Finish();
    timer_.expires_after(kDrainGrace);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec && !self->finished_) self->Finish();
    });
  }

  void Fail(const Error& error) {
    finished_ = true;
    if (gone_) return;
    sink_->Send(Event("error", RuntimeError(error, "").body));
    sink_->End();
  }

  void Finish() {
    if (finished_) return;
    Flush(out_);
    Flush(err_);
    boost::system::error_code ignored;
    timer_.cancel();
    out_.fd.close(ignored);
    err_.fd.close(ignored);
    if (!*outcome_) return Fail(outcome_->error());
    finished_ = true;
    json j = json::parse(runtime::OutcomeToJson(**outcome_));
    for (const Output* o : {&out_, &err_}) {
      const std::string name = o->name;
      j[name + "_bytes"] = o->bytes;
      j[name + "_dropped_bytes"] = o->bytes - o->forwarded;
      if (o->bytes > o->forwarded && j["limit"].is_null()) j["limit"] = "output";
    }
    if (gone_) return;
    sink_->Send(Event("exit", Dump(j)));
    sink_->End();
  }

  asio::strand<asio::io_context::executor_type> strand_;
  asio::steady_timer timer_;
  runtime::ExecRequest exec_;
  const int64_t cap_;
  ExecThread exec_thread_;
  std::function<void()> released_;
  Output out_;
  Output err_;
  UniqueFd interrupt_w_;
  std::shared_ptr<ResponseStream> sink_;
  std::optional<Result<runtime::RunOutcome>> outcome_;
  bool gone_ = false;
  bool finished_ = false;
};

}  // namespace

size_t CompleteUtf8Prefix(std::string_view bytes) {
  // Look back at most 3 bytes for the lead byte of the last sequence.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking
    size_t need = (c & 0x80) == 0      ? 1
                  : (c & 0xE0) == 0xC0 ? 2
                  : (c & 0xF0) == 0xE0 ? 3
                  : (c & 0xF8) == 0xF0 ? 4
                                       : 1;  // an invalid lead byte stands alone
    return back < need ? n - back : n;
  }
  return n;  // only continuation bytes: invalid, nothing to wait for
}

HttpResponse StreamExec(asio::io_context& io, runtime::ExecRequest exec, int64_t output_cap,
                        ExecThread exec_thread, std::function<void()> released) {
  auto stream = std::make_shared<ExecStream>(io, std::move(exec), output_cap,
                                             std::move(exec_thread), std::move(released));
  HttpResponse r;
  r.status = 200;
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-store");
  r.stream = std::make_shared<StreamBody>();
  r.stream->start = [stream](std::shared_ptr<ResponseStream> sink) {
    stream->Start(std::move(sink));
  };
  // Weak: the server keeps the StreamBody until the end; the stream must not keep itself.
  r.stream->client_gone = [weak = std::weak_ptr<ExecStream>(stream)] {
    if (auto s = weak.lock()) s->ClientGone();
  };
  return r;
}

}  // namespace corral::server
