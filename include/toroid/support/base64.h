// Base64 (RFC 4648, with padding): how binary data, such as a kernel table entry's cubin, is
// written in a text form.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace toroid {

std::string base64_encode(std::string_view bytes);
// Nullopt when `text` is not base64 (a character outside the alphabet, a wrong length or padding).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace toroid
