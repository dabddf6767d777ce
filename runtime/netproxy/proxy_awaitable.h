// Asio's coroutine support, for every proxy file that uses it. Include Asio's coroutine
// headers only through this file: Boost 1.74's boost/asio/awaitable.hpp uses std::exchange
// without including <utility>, so it only compiles when <utility> came first, which this
// file makes sure of (the clang-format fence below keeps that order).
//
// GCC 12 destroys twice an aggregate built in braces inside a co_await expression, e.g.
// `co_await F(Request{"a", name})` when Request holds a std::string (a double free that
// ASan reports). Build such arguments as named variables first, or take plain parameters.
//
// GCC 12 also warns -Wmismatched-new-delete where a coroutine's frame, allocated by
// Asio's awaitable_frame_base::operator new, is freed by its matching operator delete
// (a false positive once the frame code is inlined). Off in the files that include this.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
#pragma once

// clang-format off
#include <utility>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on
