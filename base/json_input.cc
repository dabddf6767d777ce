#include "base/json_input.h"

#include <optional>
#include <variant>

namespace corral {
namespace {

using json = nlohmann::json;

// Follows nesting only; every value is accepted and dropped. Stops the parse (returns
// false) at the first level past the bound, or with the parser's own error.
class DepthCheck : public nlohmann::json_sax<json> {
 public:
  explicit DepthCheck(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() override { return true; }
  bool boolean(bool /*val*/) override { return true; }
  bool number_integer(number_integer_t /*val*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*val*/) override { return true; }
  bool number_float(number_float_t /*val*/, const string_t& /*s*/) override { return true; }
  bool string(string_t& /*val*/) override { return true; }
  bool binary(binary_t& /*val*/) override { return true; }
  bool key(string_t& /*val*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return Enter(); }
  bool start_array(std::size_t /*elements*/) override { return Enter(); }
  bool end_object() override { return Leave(); }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) override {
    error_ = JsonInputError{JsonInputProblem::kSyntax, position, ex.what()};
    return false;
  }

  const std::optional<JsonInputError>& error() const { return error_; }
  bool too_deep() const { return too_deep_; }

 private:
  bool Enter() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }
  bool Leave() {
    --depth_;
    return true;
  }

  std::size_t max_depth_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  std::optional<JsonInputError> error_;
};

}  // namespace

std::variant<json, JsonInputError> ParseJsonInput(std::string_view text,
                                                  const JsonInputLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return JsonInputError{JsonInputProblem::kTooLarge, 0,
                          "JSON of " + std::to_string(text.size()) + " bytes is larger than " +
                              std::to_string(limits.max_bytes)};
  }
  DepthCheck check(limits.max_depth);
  bool ok = json::sax_parse(text.begin(), text.end(), &check);
  if (!ok) {
    if (check.error()) return *check.error();
    if (check.too_deep()) {
      return JsonInputError{JsonInputProblem::kTooDeep, 0,
                            "JSON nests deeper than " + std::to_string(limits.max_depth) +
                                " levels of arrays and objects"};
    }
    return JsonInputError{JsonInputProblem::kSyntax, 0, "JSON could not be parsed"};
  }
  // Cannot fail now: the same text passed the same parser.
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

Result<json> ParseJsonInputOrError(std::string_view text, const JsonInputLimits& limits) {
  auto parsed = ParseJsonInput(text, limits);
  if (auto* error = std::get_if<JsonInputError>(&parsed)) {
    return Error(ErrorCode::kInvalidArgument, error->message);
  }
  return std::get<json>(std::move(parsed));
}

json ParseJsonInputOrDiscarded(std::string_view text, const JsonInputLimits& limits) {
  auto parsed = ParseJsonInput(text, limits);
  if (auto* j = std::get_if<json>(&parsed)) return std::move(*j);
  return json(json::value_t::discarded);
}

}  // namespace corral
