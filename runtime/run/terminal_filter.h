// TerminalFilter: what a jail's output may do to the operator's terminal. A streaming
// state machine over the bytes a command wrote, for when they are relayed to a tty
// (runtime/run/watch.h): it keeps text and neutralises everything that would make the
// terminal *do* something other than show it.
//
// Kept as they are: printable ASCII, valid UTF-8 (U+00A0 and up), \n \r \t \b, and SGR
// colour/attribute sequences (CSI params m, params only digits ; :, at most 64 bytes).
// Dropped whole (nothing of them reaches the terminal): every other escape sequence —
// CSI (cursor motion, erase, modes, device reports), OSC (titles, OSC 52 clipboard,
// hyperlinks, colours), DCS, SOS, PM, APC (up to BEL, ST, CAN or SUB), and two-byte
// escapes (ESC c reset, ESC 7 ...), in their 7-bit (ESC x) and UTF-8-encoded C1 forms.
// Shown visibly: any other C0 control in caret notation (BEL as ^G, a lone ESC as ^[),
// DEL as ^?; a C1 control that starts no sequence (U+0080..U+009F) as <U+0085>; bytes
// that are not UTF-8 (among them raw 8-bit C1 bytes) as U+FFFD.
// Why drop sequences but show controls: a dropped cursor or erase sequence loses no text
// (progress bars still read), while seeing ^G or U+FFFD tells the operator that the
// output held something the terminal was not given.
//
// Sequences may be split anywhere across Feed calls. Memory is bounded: only a partial
// UTF-8 character and a partial SGR's parameters are held. A string sequence (OSC, DCS,
// ...) longer than kMaxStringBytes ends there and what follows is shown as text.
// Not thread-safe; one per relayed stream. Parent side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace corral::runtime {

class TerminalFilter {
 public:
  static constexpr size_t kMaxSgrBytes = 64;
  static constexpr size_t kMaxStringBytes = 1 << 20;

  // Appends the filtered form of data[0, size) to *out.
  void Feed(const char* data, size_t size, std::string* out);
  // End of stream: a partial UTF-8 character becomes U+FFFD, a partial sequence is dropped.
  void Finish(std::string* out);

 private:
  enum class State : uint8_t {
    kGround,
    kEscape,           // after ESC
    kEscIntermediate,  // ESC then 0x20..0x2F: a two-byte (or longer) escape
    kCsi,              // after ESC [ or U+009B
    kString,           // inside OSC/DCS/SOS/PM/APC, up to its terminator
    kStringEscape,     // ESC inside a string: ST (ESC \) or the start of another sequence
  };
  void Byte(unsigned char c, std::string* out);
  void Ground(unsigned char c, std::string* out);
  void Utf8(unsigned char c, std::string* out);
  void CodePoint(uint32_t cp, std::string* out);
  void Control(unsigned char c, std::string* out);
  void C1(uint32_t cp, std::string* out);
  void Csi(unsigned char c, std::string* out);

  State state_ = State::kGround;
  // The partial UTF-8 character: bytes so far and how many it needs.
  char utf8_[4] = {};
  uint8_t utf8_have_ = 0;
  uint8_t utf8_need_ = 0;
  std::string csi_;          // a CSI's parameter bytes so far
  bool csi_plain_ = true;    // still only digits ; : (could be SGR)
  size_t string_bytes_ = 0;  // bytes swallowed in the current string sequence
  bool string_c2_ = false;   // the last of them was 0xC2 (U+009C, ST, may follow)
};

}  // namespace corral::runtime
