#include "server/http/server.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <optional>

namespace corral::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::duration;
using std::chrono::duration_cast;
using std::chrono::steady_clock;

struct HttpServer::Shared {
  asio::io_context& io;
  runtime::ServerConfig limits;
  Handler handler;
  RejectLog reject_log;
  std::atomic<size_t> in_flight{0};
  std::atomic<size_t> connections{0};
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::map<std::string, int> per_client;  // TCP peers only
  // The acceptors live on one strand: closing them (SIGTERM) never races an accept.
  asio::strand<asio::io_context::executor_type> accept_strand;
  std::optional<asio::ip::tcp::acceptor> tcp;
  std::optional<asio::local::stream_protocol::acceptor> local;

  Shared(asio::io_context& io_, runtime::ServerConfig l, Handler h, RejectLog r)
      : io(io_),
        limits(std::move(l)),
        handler(std::move(h)),
        reject_log(std::move(r)),
        accept_strand(asio::make_strand(io_)) {}

  // Registers a connection from `client`; false when a limit says no.
  bool Admit(const std::string& client, bool per_client_limit) {
    if (connections.fetch_add(1) >= static_cast<size_t>(limits.max_connections)) {
      connections.fetch_sub(1);
      return false;
    }
    if (!per_client_limit) return true;
    std::lock_guard<std::mutex> lock(mu);
    int& n = per_client[client];
    if (n >= limits.max_connections_per_client) {
      if (n == 0) per_client.erase(client);
      connections.fetch_sub(1);
      return false;
    }
    ++n;
    return true;
  }
  void Leave(const std::string& client, bool per_client_limit) {
    connections.fetch_sub(1);
    if (!per_client_limit) return;
    std::lock_guard<std::mutex> lock(mu);
    auto it = per_client.find(client);
    if (it != per_client.end() && --it->second <= 0) per_client.erase(it);
  }
};

namespace {

steady_clock::duration Seconds(double s) {
  return duration_cast<steady_clock::duration>(duration<double>(s));
}

HttpResponse Refusal(int status, const std::string& detail) {
  return HttpResponse::Json(status, {{"detail", detail}});
}

void ParseQuery(std::string_view q, std::multimap<std::string, std::string>* out) {
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string name = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    out->emplace(std::move(name), std::move(value));
  }
}

template <class Protocol>
class Session : public std::enable_shared_from_this<Session<Protocol>> {
 public:
  using Stream = beast::basic_stream<Protocol, asio::any_io_executor, beast::unlimited_rate_policy>;

  Session(typename Protocol::socket socket, std::shared_ptr<HttpServer::Shared> shared,
          std::string client, bool per_client)
      : stream_(std::move(socket)),
        shared_(std::move(shared)),
        client_(std::move(client)),
        per_client_(per_client) {}
  ~Session() { shared_->Leave(client_, per_client_); }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->Read(); });
  }

  // Answers `status` without reading a request, then closes (a connection over a limit).
  void Refuse(int status, const std::string& detail) {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this(), status, detail] {
      self->Write(Refusal(status, detail), false, false);
    });
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(shared_->limits.max_header_bytes));
    parser_->body_limit(static_cast<uint64_t>(shared_->limits.max_body_bytes));
    stream_.expires_after(
        Seconds(first_ ? shared_->limits.header_timeout : shared_->limits.keepalive_timeout));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  // Errors of a read: a client gone or too slow just loses its connection; bad HTTP or a
  // limit gets its status first.
  void OnReadError(beast::error_code ec) {
    if (ec == http::error::header_limit) return Reject(431, "request headers too large");
    if (ec == http::error::body_limit) return Reject(413, "request body too large");
    if (ec == beast::error::timeout) {
      // An idle keep-alive connection timing out is normal; a half-sent request is not.
      if (shared_->reject_log && parser_ && parser_->got_some()) {
        shared_->reject_log(client_, 408, "read timeout");
      }
      return Close();
    }
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    static const auto& http_errors = http::make_error_code(http::error::bad_method).category();
    if (ec.category() == http_errors) return Reject(400, "malformed HTTP request");
    Close();
  }

  void OnHeader(beast::error_code ec) {
    first_ = false;
    if (ec) return OnReadError(ec);
    const auto& header = parser_->get();
    if (auto len = parser_->content_length();
        len && *len > static_cast<uint64_t>(shared_->limits.max_body_bytes)) {
      return Reject(413, "request body too large (limit " +
                             std::to_string(shared_->limits.max_body_bytes) + " bytes)");
    }
    stream_.expires_after(Seconds(shared_->limits.body_timeout));
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      return http::async_write(
          stream_, *cont, [self = this->shared_from_this(), cont](beast::error_code wec, size_t) {
            if (wec) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->OnReadError(ec);
                       self->Dispatch();
                     });
  }

  void Dispatch() {
    auto message = parser_->release();
    parser_.reset();
    keep_alive_ = message.keep_alive();
    if (shared_->stopping.load())
      return Write(Refusal(503, "the server is shutting down"), false, false);
    HttpRequest req;
    req.method = std::string(message.method_string());
    std::string_view target(message.target().data(), message.target().size());
    size_t q = target.find('?');
    req.path = PercentDecode(target.substr(0, q), false);
    if (q != std::string_view::npos) ParseQuery(target.substr(q + 1), &req.query);
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers.emplace(std::move(name), std::string(field.value()));
    }
    req.body = std::move(message.body());
    req.client = client_;
    const bool counted = req.path != "/health";
    if (counted &&
        shared_->in_flight.fetch_add(1) >= static_cast<size_t>(shared_->limits.max_in_flight)) {
      shared_->in_flight.fetch_sub(1);
      HttpResponse busy = Refusal(429, "too many requests in flight; retry shortly");
      busy.headers.emplace_back("Retry-After", "1");
      if (shared_->reject_log) shared_->reject_log(client_, 429, "max_in_flight");
      return Write(std::move(busy), keep_alive_, false);
    }
    stream_.expires_never();  // the handler may take as long as its command
    auto once = std::make_shared<std::atomic<bool>>(false);
    Reply reply = [self = this->shared_from_this(), once, counted](HttpResponse response) {
      if (once->exchange(true)) return;
      asio::post(self->stream_.get_executor(), [self, counted, r = std::move(response)]() mutable {
        self->Write(std::move(r), self->keep_alive_, counted);
      });
    };
    shared_->handler(std::move(req), std::move(reply));
  }

  void Reject(int status, const std::string& why) {
    if (shared_->reject_log) shared_->reject_log(client_, status, why.c_str());
    Write(Refusal(status, why), false, false);
  }

  void Write(HttpResponse r, bool keep_alive, bool counted) {
    if (r.stream) return WriteStream(std::move(r), counted);
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "corral");
    res->set(http::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) res->set(name, value);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive && !shared_->stopping.load());
    res->prepare_payload();
    stream_.expires_after(Seconds(shared_->limits.body_timeout));
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, counted](beast::error_code ec, size_t) {
          if (counted) self->shared_->in_flight.fetch_sub(1);
          if (ec) return self->Close();
          if (!res->keep_alive()) return self->LingerClose();
          self->Read();
        });
  }

  // The writing end handed to a streamed body's producer: every call hops onto the
  // connection's strand, where the chunks are queued and written one at a time.
  class Chunks : public ResponseStream {
   public:
    explicit Chunks(std::shared_ptr<Session> session) : session_(std::move(session)) {}
    void Send(std::string data) override {
      if (data.empty()) return;  // an empty chunk would end the body
      asio::post(session_->stream_.get_executor(), [s = session_, d = std::move(data)]() mutable {
        s->QueueChunk(std::move(d), false);
      });
    }
    void End() override {
      asio::post(session_->stream_.get_executor(), [s = session_] { s->QueueChunk({}, true); });
    }

   private:
    std::shared_ptr<Session> session_;
  };

  // A streamed body: the header (chunked, Connection: close), then the producer's chunks.
  // Meanwhile one read stays posted on the socket: a client that sends nothing more and
  // whose read ends (EOF, reset) has gone, and the producer is told at once, even while it
  // has nothing to write. The connection is never reused (pipelined requests are dropped).
  void WriteStream(HttpResponse r, bool counted) {
    stream_counted_ = counted;
    stream_body_ = std::move(r.stream);
    auto res =
        std::make_shared<http::response<http::empty_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "corral");
    res->set(http::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) res->set(name, value);
    res->keep_alive(false);
    res->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    stream_.expires_after(Seconds(shared_->limits.body_timeout));
    http::async_write_header(
        stream_, *sr, [self = this->shared_from_this(), res, sr](beast::error_code ec, size_t) {
          if (ec) return self->StreamGone();
          if (!self->writing_) self->stream_.expires_never();
          self->WatchClient();
          if (self->stream_body_ && self->stream_body_->start) {
            self->stream_body_->start(std::make_shared<Chunks>(self));
          }
        });
  }

  void WatchClient() {
    stream_.async_read_some(asio::buffer(drain_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              if (self->stream_done_)
                                return self->Close();  // the lingering read after the end
                              if (ec) return self->StreamGone();
                              self->WatchClient();  // bytes from the client are ignored
                            });
  }

  void QueueChunk(std::string data, bool last) {
    if (stream_done_ || stream_ending_) return;
    if (last) stream_ending_ = true;
    chunks_.push_back({std::move(data), last});
    if (!writing_) WriteNextChunk();
  }

  void WriteNextChunk() {
    if (chunks_.empty()) {
      writing_ = false;
      stream_.expires_never();  // the producer may be silent for long; the read watches
      return;
    }
    writing_ = true;
    auto chunk = std::make_shared<std::pair<std::string, bool>>(std::move(chunks_.front()));
    chunks_.pop_front();
    stream_.expires_after(Seconds(shared_->limits.body_timeout));  // a client not reading
    auto done = [self = this->shared_from_this(), chunk](beast::error_code ec, size_t) {
      if (ec) return self->StreamGone();
      if (chunk->second) return self->StreamFinished();
      self->WriteNextChunk();
    };
    if (chunk->second) {
      asio::async_write(stream_, http::make_chunk_last(), std::move(done));
    } else {
      asio::async_write(stream_, http::make_chunk(asio::buffer(chunk->first)), std::move(done));
    }
  }

  // The last chunk is out: half-close and let the watching read see the client's EOF
  // (bounded) before closing, as LingerClose does.
  void StreamFinished() {
    EndStream();
    beast::error_code ignored;
    stream_.socket().shutdown(asio::socket_base::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
  }

  void StreamGone() {
    if (stream_done_) return;
    auto body = stream_body_;
    EndStream();
    Close();
    if (body && body->client_gone) body->client_gone();
  }

  void EndStream() {
    stream_done_ = true;
    chunks_.clear();
    stream_body_.reset();  // the producer holds a Chunks, which holds us: no cycle left
    if (stream_counted_) shared_->in_flight.fetch_sub(1);
    stream_counted_ = false;
  }

  // Closing with unread request bytes would make the kernel send a reset, which can
  // destroy the answer before the client reads it: half-close, drain briefly, then close.
  void LingerClose() {
    beast::error_code ignored;
    stream_.socket().shutdown(asio::socket_base::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    Drain();
  }
  void Drain() {
    stream_.async_read_some(asio::buffer(drain_),
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(asio::socket_base::shutdown_both, ignored);
    stream_.close();
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpServer::Shared> shared_;
  std::string client_;
  bool per_client_;
  bool first_ = true;
  std::array<char, 4096> drain_;
  bool keep_alive_ = false;
  // A streamed response (WriteStream), all on the strand.
  std::shared_ptr<StreamBody> stream_body_;
  std::deque<std::pair<std::string, bool>> chunks_;  // (data, is the last chunk)
  bool writing_ = false;
  bool stream_ending_ = false;  // End() queued
  bool stream_done_ = false;    // finished or the client went
  bool stream_counted_ = false;
};

template <class Acceptor>
void Accept(std::shared_ptr<HttpServer::Shared> shared, Acceptor& acceptor) {
  using Protocol = typename Acceptor::protocol_type;
  acceptor.async_accept(asio::make_strand(shared->io), [shared, &acceptor](
                                                           beast::error_code ec,
                                                           typename Protocol::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      std::string client = "unix";
      bool per_client = false;
      if constexpr (std::is_same_v<Protocol, asio::ip::tcp>) {
        beast::error_code pe;
        auto peer = socket.remote_endpoint(pe);
        client = pe ? "?" : peer.address().to_string();
        per_client = true;
      }
      const bool admitted = shared->Admit(client, per_client);
      if (admitted) {
        std::make_shared<Session<Protocol>>(std::move(socket), shared, client, per_client)->Run();
      } else {
        // Counted for the moment it takes to say no.
        shared->connections.fetch_add(1);
        if (per_client) {
          std::lock_guard<std::mutex> lock(shared->mu);
          ++shared->per_client[client];
        }
        if (shared->reject_log) shared->reject_log(client, 429, "connection limit");
        std::make_shared<Session<Protocol>>(std::move(socket), shared, client, per_client)
            ->Refuse(429, "too many connections");
      }
    }
    Accept(shared, acceptor);
  });
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, const runtime::ServerConfig& limits, Handler handler,
                       RejectLog reject_log)
    : shared_(std::make_shared<Shared>(io, limits, std::move(handler), std::move(reject_log))) {}

HttpServer::~HttpServer() = default;

size_t HttpServer::in_flight() const { return shared_->in_flight.load(); }
size_t HttpServer::connections() const { return shared_->connections.load(); }

Status HttpServer::Listen(const ListenAddress& address) {
  beast::error_code ec;
  if (address.is_unix) {
    struct stat st;
    if (::lstat(address.unix_path.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        return Error(ErrorCode::kAlreadyExists, address.unix_path + " exists and is no socket");
      }
      ::unlink(address.unix_path.c_str());
    }
    auto& a = shared_->local.emplace(shared_->accept_strand);
    asio::local::stream_protocol::endpoint ep(address.unix_path);
    a.open(ep.protocol(), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec && ::chmod(address.unix_path.c_str(), 0660) != 0) {
      return Error::FromErrno(errno, address.unix_path);
    }
  } else {
    auto& a = shared_->tcp.emplace(shared_->accept_strand);
    asio::ip::tcp::endpoint ep(asio::ip::make_address(address.host), address.port);
    a.open(ep.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) bound_port_ = a.local_endpoint().port();
  }
  if (ec) return Error(ErrorCode::kIo, "listen on " + address.ToString() + ": " + ec.message());
  return Ok();
}

void HttpServer::Start() {
  asio::post(shared_->accept_strand, [shared = shared_] {
    if (shared->tcp) Accept(shared, *shared->tcp);
    if (shared->local) Accept(shared, *shared->local);
  });
}

void HttpServer::StopAccepting() {
  shared_->stopping.store(true);
  asio::post(shared_->accept_strand, [shared = shared_] {
    beast::error_code ignored;
    if (shared->tcp && shared->tcp->is_open()) shared->tcp->close(ignored);
    if (shared->local && shared->local->is_open()) shared->local->close(ignored);
  });
}

}  // namespace corral::server
