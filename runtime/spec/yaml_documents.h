// Counting the documents of a YAML text without yaml-cpp 0.7's endless loop: on a stray
// flow entry at document level ("," alone, or `"x",`) its parser never consumes the
// token and yields empty documents forever, so YAML::LoadAll grows until memory runs out
// (found by tests/fuzz/fuzz_config). Parent process only (uses yaml-cpp).
#pragma once

#include <cstddef>
#include <string>

namespace corral::runtime {

// The number of documents in `yaml`. Throws YAML::ParserException (with the mark of the
// token yaml-cpp is stuck on) where a document would start where the last one did, and
// whatever yaml-cpp throws for invalid YAML.
size_t CountYamlDocuments(const std::string& yaml);

}  // namespace corral::runtime
