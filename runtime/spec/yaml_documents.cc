#include "runtime/spec/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <optional>
#include <sstream>

#include "runtime/spec/utf8_text.h"

namespace corral::runtime {

namespace {

// Sees where each document starts; the node events are not needed.
class DocumentStarts : public YAML::EventHandler {
 public:
  explicit DocumentStarts(const std::string& text) : text_(text) {}
  void OnDocumentStart(const YAML::Mark& mark) override {
    // A document always consumes at least one token, so a new one starting at the same
    // place means the parser made no progress and would repeat this forever.
    if (last_ && last_->pos == mark.pos) {
      throw YAML::ParserException(mark,
                                  "unexpected " + TokenAt(mark) + " where a node should start");
    }
    last_ = mark;
    ++count_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  size_t count() const { return count_; }

 private:
  std::string TokenAt(const YAML::Mark& mark) const {
    if (mark.pos < 0 || static_cast<size_t>(mark.pos) >= text_.size()) return "token";
    char c = text_[mark.pos];
    return std::isprint(static_cast<unsigned char>(c)) ? std::string("'") + c + "'" : "token";
  }

  const std::string& text_;
  std::optional<YAML::Mark> last_;
  size_t count_ = 0;
};

}  // namespace

size_t CountYamlDocuments(const std::string& yaml) {
  std::istringstream in(yaml);
  YAML::Parser parser(in);
  DocumentStarts handler(yaml);
  while (parser.HandleNextDocument(handler)) {
  }
  return handler.count();
}

Result<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& origin) {
  RETURN_IF_ERROR(CheckUtf8Text(text, origin));
  try {
    // Counted first: YAML::Load never returns on some invalid texts (above).
    const size_t count = CountYamlDocuments(text);
    if (count > 1) {
      return Error(ErrorCode::kInvalidArgument,
                   origin + ": expected one YAML document, found " + std::to_string(count));
    }
    if (count == 0) return YAML::Node();
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Error(ErrorCode::kInvalidArgument, origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                                                  std::to_string(e.mark.column + 1) +
                                                  ": invalid YAML: " + e.msg);
  }
}

}  // namespace corral::runtime
