// Counting the documents of a YAML text without yaml-cpp 0.7's endless loop: on a stray
// flow entry at document level ("," alone, or `"x",`) its parser never consumes the
// token and yields empty documents forever, so YAML::LoadAll grows until memory runs out
// (found by tests/fuzz/fuzz_config). Parent process only (uses yaml-cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

#include "base/result.h"

namespace corral::runtime {

// One configuration file's YAML, read the one way every section reader shares (the jail's
// LoadConfigText, the tool layer's LoadToolConfigFile, the daemon's LoadServerConfigFile):
// valid UTF-8 without NUL (CheckUtf8Text, which names the line), at most one document
// (counted first: see below), a syntax error as "ORIGIN:LINE:COL: invalid YAML: why". A
// text with no document is a null node. Every node keeps its mark, so a reader given any
// part of the document reports the file's own line numbers.
Result<YAML::Node> LoadYamlDocument(const std::string& text, const std::string& origin);

// The number of documents in `yaml`. Throws YAML::ParserException (with the mark of the
// token yaml-cpp is stuck on) where a document would start where the last one did, and
// whatever yaml-cpp throws for invalid YAML.
size_t CountYamlDocuments(const std::string& yaml);

}  // namespace corral::runtime
