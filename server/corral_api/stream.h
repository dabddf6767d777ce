// Streamed exec for corral's own API: `POST /api/corral/v1/sandboxes/{name}/exec` with
// `"stream": true` or `Accept: text/event-stream` answers 200 `text/event-stream` at once
// and sends the command's output as server-sent events while it runs:
//   event: stdout   data: {"text": "..."}      (as the command writes it)
//   event: stderr   data: {"text": "..."}
//   event: exit     data: <the JSON outcome of a non-streamed exec, without stdout/stderr>
//   event: error    data: {"error": {...}}     (the exec could not run; no exit event then)
// `text` is UTF-8 (a multi-byte character split across reads is held back until whole;
// invalid bytes become U+FFFD).
//
// Limits are the non-streamed exec's: the timeout (the request's or the sandbox's) ends
// the command (exit event, status "timed_out"); each stream forwards at most the output
// cap (the request's output_limit, else the sandbox's limits.output) — the head, since a
// tail cannot be known before the end — and counts the rest in *_dropped_bytes (limit
// "output"). A client that disconnects ends the command: the supervisor's interrupt pipe
// is closed, which it reads as SIGHUP and answers with SIGKILL to the exec's processes
// (runtime/run/watch.cc); background processes the command left (`cmd &`) are not its.
//
// Threads: the command's output is read with Asio (posix stream descriptors) on the
// daemon's I/O threads and written to the socket asynchronously; no thread waits on a
// stream. The one thread an exec has (streamed or not) is the exec's own, blocked in
// runtime::ExecInSandbox: the jail it clones has a parent-death signal tied to it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "runtime/sandboxes/persistent.h"
#include "server/http/message.h"

namespace corral::server {

// Runs `blocking` on a thread of its own that ends after it, then the function it
// returned — unless the API is being destroyed (then that is dropped: the io_context may be
// gone by the time a long exec returns).
using ExecThread = std::function<void(std::function<std::function<void()>()> blocking)>;

// The 200 event-stream response for `exec` (its output cap in `output_cap`). The command
// starts once the response's header is written, on a thread from `exec_thread`.
// `released` is called once when the stream is done with (the command ended, or never
// started): the caller's exec slot.
HttpResponse StreamExec(boost::asio::io_context& io, runtime::ExecRequest exec, int64_t output_cap,
                        ExecThread exec_thread, std::function<void()> released);

// The index where `bytes` ends with an incomplete UTF-8 sequence (bytes.size() when it
// does not): what a chunk may send now, the rest waits for the next read.
size_t CompleteUtf8Prefix(std::string_view bytes);

}  // namespace corral::server
