// The pool protocol (runtime/pool/pool_protocol.h, pool_request.h): what a pool server reads
// from a client (request head, run spec, exec command), what a client reads back (the
// outcome's wire form) and the frames both are carried in (base/frames.h). The first byte
// chooses the parser; the rest is the frame. An outcome that parses must survive the
// reports made from it and write back to a wire form that parses.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "base/frames.h"
#include "runtime/pool/pool_protocol.h"
#include "runtime/pool/pool_request.h"
#include "runtime/run/outcome_report.h"
#include "runtime/spec/config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace corral::runtime;

void FuzzOutcome(const std::string& frame) {
  auto outcome = OutcomeFromWire(frame);
  if (!outcome) return;
  (void)CliExitCode(*outcome);
  (void)OutcomeToJson(*outcome);
  (void)OutcomeReport(*outcome, LimitsSpec{}, /*with_reason=*/true);
  std::string wire = OutcomeToWire(*outcome);
  auto back = OutcomeFromWire(wire);
  if (!back) corral::fuzz::Fail("OutcomeFromWire(OutcomeToWire(o)) failed", wire);
  if (OutcomeToWire(*back) != wire)
    corral::fuzz::Fail("outcome wire form does not round-trip", wire);
}

// Feeds `bytes` through a socket pair and reads frames until it runs dry. A frame header
// that claims more than the input holds ends the input there: ReceiveFrame would allocate
// the claimed size (up to kMaxFrameBytes) and find the frame cut short, slowly.
void FuzzFrames(const std::string& bytes) {
  size_t end = 0;
  while (end + 4 <= bytes.size()) {
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[end + i])); };
    uint32_t size = b(0) | b(1) << 8 | b(2) << 16 | b(3) << 24;
    if (size > bytes.size() - end - 4) break;
    end += 4 + size;
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;
  corral::UniqueFd reader(fds[0]), writer(fds[1]);
  std::string input = bytes.substr(0, end + std::min<size_t>(bytes.size() - end, 3));
  if (::write(writer.get(), input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    return;
  }
  writer.Reset();
  for (int i = 0; i < 64; ++i) {
    auto frame = corral::ReceiveFrame(reader.get());
    if (!frame) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string frame = corral::fuzz::AsString(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      (void)ParsePoolRequestHead(frame);
      break;
    case 1:
      if (auto spec = ParseRunSpecFrame(frame)) (void)ValidateLateFields(*spec);
      break;
    case 2:
      (void)ParseExecFrame(frame);
      break;
    case 3:
      FuzzOutcome(frame);
      break;
    default:
      FuzzFrames(frame);
  }
  return 0;
}
