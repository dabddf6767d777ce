// Error values and Result<T>, the return type of every fallible host-side function.
//
// Result<T> is shaped like C++23 std::expected<T, Error> (has_value, value, error,
// operator*, operator->) so it can be swapped for it later. Nothing in corral throws
// across a module boundary; only main() decides to exit.
//
// Not for use after clone() in a jail child: Error allocates. The child reports failures
// with jail::SetupRecord instead.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace corral {

enum class ErrorCode {
  kInvalidArgument,     // the caller's input is wrong (config, flags, paths)
  kNotFound,            // a named thing does not exist
  kAlreadyExists,       // a named thing exists and must not
  kFailedPrecondition,  // a named thing is in the wrong state for this (a paused sandbox)
  kPermissionDenied,    // the kernel or policy said no
  kUnsupported,         // this host lacks a kernel feature we need
  kSetupFailed,         // a jail child failed a setup step (see message)
  kIo,                  // a read/write/syscall failed for another reason
  kInternal,            // a bug in corral
};

// Short lowercase name, e.g. "invalid_argument".
const char* ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), message_(std::move(message)), errno_(sys_errno) {}

  // "<context>: <strerror(err)>", with the code derived from errno.
  static Error FromErrno(int err, const std::string& context);

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  int sys_errno() const { return errno_; }

  // Adds outer context: "reading config: <message>".
  Error WithContext(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_;
  int errno_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit like std::expected
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!has_value());
    return std::get<1>(v_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const { assert(ok_); }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status Ok() { return {}; }

}  // namespace corral

#define CORRAL_CONCAT_INNER_(a, b) a##b
#define CORRAL_CONCAT_(a, b) CORRAL_CONCAT_INNER_(a, b)

// Returns the error of a failed Result/Status from the enclosing function.
#define RETURN_IF_ERROR(expr)                           \
  do {                                                  \
    auto corral_status_ = (expr);                       \
    if (!corral_status_) return corral_status_.error(); \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()); declares x from a Result or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(CORRAL_CONCAT_(corral_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp) return tmp.error();                \
  lhs = std::move(tmp).value()
