// The Content-Disposition header of a download, for any file name a sandbox can create.
//
// Why: a name is bytes chosen by whatever ran in the sandbox — quotes, control bytes,
// UTF-8 or not. Put raw into a header it can end the header or smuggle another one in, and
// clients show it mangled. RFC 6266 with RFC 5987's extended parameter carries any name
// exactly (percent-encoded UTF-8) beside a plain ASCII fallback for old clients.
#pragma once

#include <string>
#include <string_view>

namespace corral::server {

// `attachment; filename="<ascii>"; filename*=UTF-8''<percent-encoded>`. The ASCII
// fallback keeps printable ASCII and replaces everything else (and '"', '\', '%') with
// '_'; the extended form is added only when the fallback differs from the name.
std::string AttachmentDisposition(std::string_view filename);

}  // namespace corral::server
