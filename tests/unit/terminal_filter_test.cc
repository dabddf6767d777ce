// TerminalFilter (runtime/run/terminal_filter.h): what of a jail's output reaches the
// operator's terminal. Every case is also fed split at every byte boundary and one byte
// at a time: the filter is a streaming state machine, reads split sequences anywhere.
#include "runtime/run/terminal_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace corral::runtime {
namespace {

std::string Whole(const std::string& in) {
  TerminalFilter f;
  std::string out;
  f.Feed(in.data(), in.size(), &out);
  f.Finish(&out);
  return out;
}

// The same input through every two-piece split and byte by byte must give the same.
std::string Filter(const std::string& in) {
  std::string whole = Whole(in);
  for (size_t cut = 0; cut <= in.size(); ++cut) {
    TerminalFilter f;
    std::string out;
    f.Feed(in.data(), cut, &out);
    f.Feed(in.data() + cut, in.size() - cut, &out);
    f.Finish(&out);
    EXPECT_EQ(out, whole) << "split at " << cut;
  }
  TerminalFilter f;
  std::string out;
  for (char c : in) f.Feed(&c, 1, &out);
  f.Finish(&out);
  EXPECT_EQ(out, whole) << "byte by byte";
  return whole;
}

TEST(TerminalFilterTest, PlainTextAndKeptControlsPassUnchanged) {
  std::string text = "hello world\n\tcol\r\nback\bspace ~!@#$%^&*()\n";
  EXPECT_EQ(Filter(text), text);
}

TEST(TerminalFilterTest, Utf8TextPassesUnchanged) {
  std::string text =
      "gr\xC3\xBC\xC3\x9F"
      "e \xE2\x82\xAC \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xC2\xA0\n";
  EXPECT_EQ(Filter(text), text);
}

TEST(TerminalFilterTest, SgrColoursAreKept) {
  std::string text = "\x1b[1;31mred\x1b[0m \x1b[38;5;200mx\x1b[m \x1b[38:2::1:2:3mtc\x1b[0m";
  EXPECT_EQ(Filter(text), text);
}

TEST(TerminalFilterTest, Osc52ClipboardIsDropped) {
  EXPECT_EQ(Filter("a\x1b]52;c;ZWNobyBwd25lZAo=\x07"
                   "b"),
            "ab");
  EXPECT_EQ(Filter("a\x1b]52;c;ZWNobyBwd25lZAo=\x1b\\b"), "ab");
}

TEST(TerminalFilterTest, TitleAndHyperlinkOscAreDropped) {
  EXPECT_EQ(Filter("\x1b]0;pwned title\x07ok\n"), "ok\n");
  EXPECT_EQ(Filter("\x1b]2;t\x1b\\ok"), "ok");
  EXPECT_EQ(Filter("\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\"), "link");
}

TEST(TerminalFilterTest, DcsApcPmSosAreDropped) {
  EXPECT_EQ(Filter("1\x1bP+q544e\x1b\\2"), "12");       // DCS (XTGETTCAP)
  EXPECT_EQ(Filter("1\x1b_Gf=100;AAAA\x1b\\2"), "12");  // APC (kitty graphics)
  EXPECT_EQ(Filter("1\x1b^privacy\x1b\\2"), "12");      // PM
  EXPECT_EQ(Filter("1\x1bXsos\x1b\\2"), "12");          // SOS
  EXPECT_EQ(Filter("1\x1bPq#0;2;0;0;0\x07"
                   "2"),
            "12");  // BEL ends it too
}

TEST(TerminalFilterTest, NonSgrCsiAndEscapesAreDropped) {
  EXPECT_EQ(Filter("a\x1b[2Jb\x1b[H\x1b[?1049h\x1b[6n\x1b[21t\x1b[1;31;2 qc"), "abc");
  EXPECT_EQ(Filter("a\x1b"
                   "cb\x1b"
                   "7\x1b"
                   "8\x1b(0c"),
            "abc");  // reset, save/restore, charset
  // Private or intermediate bytes make an 'm' sequence something else than SGR.
  EXPECT_EQ(Filter("\x1b[>4;2mx\x1b[?1mx\x1b[1 mx"), "xxx");
}

TEST(TerminalFilterTest, OverlongSgrIsDropped) {
  std::string params(TerminalFilter::kMaxSgrBytes + 1, '1');
  EXPECT_EQ(Filter("\x1b[" + params + "mx"), "x");
  std::string ok(TerminalFilter::kMaxSgrBytes, '1');
  EXPECT_EQ(Filter("\x1b[" + ok + "mx"), "\x1b[" + ok + "mx");
}

TEST(TerminalFilterTest, OtherControlsAreShownInCaretNotation) {
  EXPECT_EQ(Filter("bell\x07"
                   "del\x7f"
                   "nul" +
                   std::string(1, '\0') + "\x0e\x0f"),
            "bell^Gdel^?nul^@^N^O");
  EXPECT_EQ(Filter("lone\x1b\n"), "lone^[\n");
}

TEST(TerminalFilterTest, C1ControlsInUtf8FormAreNeutralised) {
  EXPECT_EQ(Filter("a\xC2\x9D"
                   "52;c;QQ==\x07"
                   "b"),
            "ab");  // OSC
  EXPECT_EQ(Filter("a\xC2\x9D"
                   "0;t\xC2\x9C"
                   "b"),
            "ab");  // ended by ST (U+009C)
  EXPECT_EQ(Filter("a\xC2\x9B"
                   "2Jb"),
            "ab");  // CSI
  EXPECT_EQ(Filter("\xC2\x9B"
                   "31mr"),
            "\x1b[31mr");  // SGR through 8-bit CSI
  EXPECT_EQ(Filter("a\xC2\x90q\xC2\x9C"
                   "b"),
            "ab");  // DCS
  EXPECT_EQ(Filter("a\xC2\x85"
                   "b"),
            "a<U+0085>b");  // NEL
}

TEST(TerminalFilterTest, RawEightBitBytesBecomeReplacementCharacters) {
  // Raw C1 bytes (a terminal in 8-bit mode takes 0x9b for CSI) are no UTF-8.
  EXPECT_EQ(Filter("a\x9b"
                   "2Jb"),
            "a\xEF\xBF\xBD"
            "2Jb");
  EXPECT_EQ(Filter("a\x9d"
                   "0;t\x07"),
            "a\xEF\xBF\xBD"
            "0;t^G");
  EXPECT_EQ(Filter("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(Filter("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(Filter("\xE2\x82"
                   "x"),
            "\xEF\xBF\xBD"
            "x");                                       // truncated, then ASCII
  EXPECT_EQ(Filter("end\xE2\x82"), "end\xEF\xBF\xBD");  // truncated at EOF
}

TEST(TerminalFilterTest, EscapeInsideAStringStartsANewSequence) {
  EXPECT_EQ(Filter("\x1b]0;t\x1b[31mred"), "\x1b[31mred");
  // CAN and SUB abort a sequence.
  EXPECT_EQ(Filter("\x1b]0;t\x18ok"), "ok");
  EXPECT_EQ(Filter("\x1b[31\x1aok"), "ok");
}

TEST(TerminalFilterTest, ControlInsideCsiAbandonsIt) { EXPECT_EQ(Filter("\x1b[3\n1m"), "\n1m"); }

TEST(TerminalFilterTest, UnterminatedStringEndsAtItsBound) {
  std::string payload(TerminalFilter::kMaxStringBytes + 5, 'A');
  std::string out = Whole("\x1b]52;c;" + payload);
  // The sequence is cut at the bound; what follows is harmless text.
  EXPECT_LT(out.size(), 16u);
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace corral::runtime
