// The filter between a jail's output and the operator's terminal
// (runtime/run/terminal_filter.h). Whatever the jail writes, what reaches the terminal:
// is valid UTF-8 with no C1 control (U+0080..U+009F); has no control byte but \n \r \t \b
// and the ESC of an SGR sequence (ESC [ digits ; : m, at most kMaxSgrBytes of parameters);
// and does not depend on how the bytes were split across reads (the first input byte
// picks a split point).
#include <cstdint>
#include <string>

#include "runtime/run/terminal_filter.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using corral::runtime::TerminalFilter;

std::string Run(const std::string& in, size_t cut) {
  TerminalFilter f;
  std::string out;
  f.Feed(in.data(), cut, &out);
  f.Feed(in.data() + cut, in.size() - cut, &out);
  f.Finish(&out);
  return out;
}

// Length of the SGR sequence at out[i] (an ESC), or 0 if it is none.
size_t SgrAt(const std::string& out, size_t i) {
  if (i + 2 >= out.size() || out[i + 1] != '[') return 0;
  size_t j = i + 2;
  while (j < out.size() && ((out[j] >= '0' && out[j] <= '9') || out[j] == ';' || out[j] == ':')) {
    ++j;
  }
  if (j >= out.size() || out[j] != 'm' || j - (i + 2) > TerminalFilter::kMaxSgrBytes) return 0;
  return j - i + 1;
}

void Check(const std::string& out, const std::string& in) {
  for (size_t i = 0; i < out.size();) {
    auto c = static_cast<unsigned char>(out[i]);
    if (c == 0x1b) {
      size_t n = SgrAt(out, i);
      if (n == 0) corral::fuzz::Fail("an ESC that starts no SGR reached the terminal", in);
      i += n;
    } else if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\b') {
      corral::fuzz::Fail("a control byte reached the terminal", in);
    } else if (c == 0x7f) {
      corral::fuzz::Fail("DEL reached the terminal", in);
    } else if (c < 0x80) {
      ++i;
    } else {
      size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
      if (len == 0 || i + len > out.size()) corral::fuzz::Fail("not UTF-8", in);
      for (size_t k = 1; k < len; ++k) {
        if ((static_cast<unsigned char>(out[i + k]) & 0xc0) != 0x80) {
          corral::fuzz::Fail("not UTF-8", in);
        }
      }
      if (c == 0xc2 && static_cast<unsigned char>(out[i + 1]) < 0xa0) {
        corral::fuzz::Fail("a C1 control reached the terminal", in);
      }
      i += len;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string in = corral::fuzz::AsString(data + 1, size - 1);
  size_t cut = in.empty() ? 0 : data[0] % (in.size() + 1);
  std::string whole = Run(in, in.size());
  Check(whole, in);
  if (Run(in, cut) != whole) corral::fuzz::Fail("the output depends on the split", in);
  return 0;
}
