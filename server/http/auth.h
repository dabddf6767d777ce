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

// Where the API key comes from, first found wins: `server.api_key` ("$NAME": the
// variable NAME), `server.api_key_file`, the systemd credential "corral-api-key"
// ($CREDENTIALS_DIRECTORY/corral-api-key: LoadCredential= in the unit), $CORRAL_API_KEY.
// Empty when none is set. A key file must be a regular file that only its owner can read
// (like ssh's keys: a key others can read is not a secret); surrounding whitespace is
// dropped. An unreadable file or a key file open to others is an error naming the path.
Result<std::string> ResolveApiKey(const std::string& configured, const std::string& key_file);

}  // namespace corral::server
