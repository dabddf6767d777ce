#include "runtime/run/terminal_filter.h"

namespace corral::runtime {

namespace {

constexpr unsigned char kEsc = 0x1b;
constexpr unsigned char kBel = 0x07;
constexpr unsigned char kCan = 0x18;
constexpr unsigned char kSub = 0x1a;
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool Kept(unsigned char c) { return c == '\n' || c == '\r' || c == '\t' || c == '\b'; }

void Caret(unsigned char c, std::string* out) {
  out->push_back('^');
  out->push_back(c == 0x7f ? '?' : static_cast<char>(c + 0x40));
}

}  // namespace

void TerminalFilter::Feed(const char* data, size_t size, std::string* out) {
  out->reserve(out->size() + size);
  for (size_t i = 0; i < size;) {
    // Plain text, the bulk of any output, is copied a run at a time.
    if (state_ == State::kGround && utf8_need_ == 0) {
      size_t run = i;
      while (run < size) {
        auto c = static_cast<unsigned char>(data[run]);
        if (!((c >= 0x20 && c < 0x7f) || Kept(c))) break;
        ++run;
      }
      out->append(data + i, run - i);
      if (run == size) return;
      i = run;
    }
    Byte(static_cast<unsigned char>(data[i++]), out);
  }
}

void TerminalFilter::Finish(std::string* out) {
  if (utf8_need_ != 0) out->append(kReplacement);
  utf8_need_ = utf8_have_ = 0;
  state_ = State::kGround;
}

void TerminalFilter::Byte(unsigned char c, std::string* out) {
  switch (state_) {
    case State::kGround:
      Ground(c, out);
      return;
    case State::kEscape:
      state_ = State::kGround;
      if (c == '[') {
        state_ = State::kCsi;
        csi_.clear();
        csi_plain_ = true;
      } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
        state_ = State::kString;  // OSC, DCS, SOS, PM, APC
        string_bytes_ = 0;
      } else if (c >= 0x20 && c <= 0x2f) {
        state_ = State::kEscIntermediate;
      } else if (c == kEsc) {
        state_ = State::kEscape;
      } else if (c < 0x20 || c >= 0x7f) {
        // ESC before something that starts no sequence: show that it was there.
        if (c != kCan && c != kSub) {
          Caret(kEsc, out);
          Ground(c, out);
        }
      }  // else 0x30..0x7e: a two-byte escape (ESC c, ESC 7, ESC =, ...): dropped
      return;
    case State::kEscIntermediate:
      if (c >= 0x20 && c <= 0x2f) return;
      state_ = State::kGround;
      if (c < 0x20 || c >= 0x7f) Ground(c, out);  // aborted; 0x30..0x7e ends it (dropped)
      return;
    case State::kCsi:
      Csi(c, out);
      return;
    case State::kString:
      if (c == kBel || c == kCan || c == kSub || (string_c2_ && c == 0x9c)) {
        state_ = State::kGround;  // BEL or ST (U+009C) ends it; CAN/SUB abort it
      } else if (c == kEsc) {
        state_ = State::kStringEscape;
      } else if (++string_bytes_ > kMaxStringBytes) {
        state_ = State::kGround;
      }
      string_c2_ = c == 0xc2;
      return;
    case State::kStringEscape:
      state_ = State::kEscape;
      if (c == '\\') {
        state_ = State::kGround;  // ST
      } else {
        Byte(c, out);  // ESC aborts the string and starts a new sequence
      }
      return;
  }
}

void TerminalFilter::Ground(unsigned char c, std::string* out) {
  if (utf8_need_ != 0 || c >= 0x80) {
    Utf8(c, out);
  } else if (c == kEsc) {
    state_ = State::kEscape;
  } else if (c < 0x20 || c == 0x7f) {
    Control(c, out);
  } else {
    out->push_back(static_cast<char>(c));
  }
}

void TerminalFilter::Control(unsigned char c, std::string* out) {
  if (Kept(c)) {
    out->push_back(static_cast<char>(c));
  } else {
    Caret(c, out);
  }
}

// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing above U+10FFFF.
void TerminalFilter::Utf8(unsigned char c, std::string* out) {
  if (utf8_need_ == 0) {
    if (c >= 0xc2 && c <= 0xdf) {
      utf8_need_ = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      utf8_need_ = 3;
    } else if (c >= 0xf0 && c <= 0xf4) {
      utf8_need_ = 4;
    } else {
      out->append(kReplacement);  // a continuation byte alone, 0xc0/0xc1, 0xf5..0xff
      return;
    }
    utf8_[0] = static_cast<char>(c);
    utf8_have_ = 1;
    return;
  }
  auto lead = static_cast<unsigned char>(utf8_[0]);
  unsigned char lo = 0x80;
  unsigned char hi = 0xbf;
  if (utf8_have_ == 1) {
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  }
  if (c < lo || c > hi) {
    out->append(kReplacement);
    utf8_need_ = utf8_have_ = 0;
    Byte(c, out);  // this byte may start something of its own
    return;
  }
  utf8_[utf8_have_++] = static_cast<char>(c);
  if (utf8_have_ < utf8_need_) return;
  uint32_t cp = 0;
  if (utf8_need_ == 2) cp = ((lead & 0x1fu) << 6) | (c & 0x3fu);
  utf8_need_ = 0;
  if (cp >= 0x80 && cp <= 0x9f) {
    C1(cp, out);
  } else {
    out->append(utf8_, utf8_have_);
  }
  utf8_have_ = 0;
}

void TerminalFilter::C1(uint32_t cp, std::string* out) {
  switch (cp) {
    case 0x9b:  // CSI
      state_ = State::kCsi;
      csi_.clear();
      csi_plain_ = true;
      return;
    case 0x90:  // DCS
    case 0x98:  // SOS
    case 0x9d:  // OSC
    case 0x9e:  // PM
    case 0x9f:  // APC
      state_ = State::kString;
      string_bytes_ = 0;
      return;
    case 0x9c:  // ST with nothing to end
      return;
    default: {
      static const char kHex[] = "0123456789ABCDEF";
      out->append("<U+00");
      out->push_back(kHex[cp >> 4]);
      out->push_back(kHex[cp & 0xf]);
      out->push_back('>');
    }
  }
}

void TerminalFilter::Csi(unsigned char c, std::string* out) {
  if (c >= 0x30 && c <= 0x3f) {  // parameter bytes
    if (!(c <= '9' || c == ';' || c == ':') || csi_.size() >= kMaxSgrBytes) csi_plain_ = false;
    if (csi_plain_) csi_.push_back(static_cast<char>(c));
    return;
  }
  if (c >= 0x20 && c <= 0x2f) {  // intermediate bytes: never SGR
    csi_plain_ = false;
    return;
  }
  state_ = State::kGround;
  if (c >= 0x40 && c <= 0x7e) {  // the final byte
    if (c == 'm' && csi_plain_) {
      out->append("\x1b[");
      out->append(csi_);
      out->push_back('m');
    }
    return;
  }
  // A control or non-ASCII byte inside the sequence: it is abandoned, and the byte is
  // taken as text (a terminal would act on a control there, so \n still shows).
  if (c == kEsc) {
    state_ = State::kEscape;
  } else if (c != kCan && c != kSub) {
    Ground(c, out);
  }
}

}  // namespace corral::runtime
