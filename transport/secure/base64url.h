// Base64url without padding (RFC 4648 section 5): the text form of keys, safe in a URL query
// and a file name.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lrpc::secure {

std::string base64urlEncode(std::span<const uint8_t> bytes);
// nullopt for any character outside the alphabet, padding, or a length no encoding has, and
// for non-zero unused bits in the last character (so each value has exactly one text form).
std::optional<std::vector<uint8_t>> base64urlDecode(std::string_view text);

}  // namespace lrpc::secure
