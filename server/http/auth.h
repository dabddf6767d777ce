// Credentials of the daemon: the API key of /api/* and each sandbox's URL token.
// Comparisons take the same time whatever the content (no timing oracle on the key or a
// token). Tokens come from getrandom(2). Pure; unit-tested.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace corral::server {

// Equal contents, in time that depends only on the length of `secret` (the attacker
// controls `given` and may learn only whether its length matched).
bool ConstantTimeEquals(std::string_view given, std::string_view secret);

// `bytes` random bytes from getrandom(2), as 2*bytes lower-case hex digits.
Result<std::string> RandomToken(size_t bytes = 32);

// The API key from `server.api_key` ("$NAME": the variable NAME) or, when that is empty,
// $CORRAL_API_KEY. Empty when neither is set.
std::string ResolveApiKey(const std::string& configured);

}  // namespace corral::server
