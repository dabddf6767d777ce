// A small fixed pool of threads for the AIO API's blocking work that ends by itself in
// bounded time (file operations: each forks a short-lived child that resolves paths as the
// sandbox user; grep is bounded at 10 s). Commands never run here: a command may last
// 600 s and its process's parent-death signal is tied to the thread that started it, so
// commands get threads of their own (runtime/sessions/shell_session.h, server/aio/bash_routes.cc).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace corral::server::aio {

class WorkPool {
 public:
  explicit WorkPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkPool() { Stop(); }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Runs `job` on a pool thread. After Stop, runs it on the caller's thread (so that every
  // Reply is still called exactly once).
  void Post(std::function<void()> job) {
    {
      std::lock_guard lock(mu_);
      if (!stopping_) {
        jobs_.push_back(std::move(job));
        cv_.notify_one();
        return;
      }
    }
    job();
  }

  // Finishes the queued jobs, then joins the threads. Idempotent.
  void Stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace corral::server::aio
