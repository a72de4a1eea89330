// Base64 as RFC 4648 writes it: the test vectors of its section 10, every byte value through a
// round trip, and text that is not base64 refused.
#include <gtest/gtest.h>

#include "toroid/support/base64.h"

namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> cases[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
                                                       {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                                       {"foobar", "Zm9vYmFy"}};
  for (const auto& [bytes, text] : cases) {
    EXPECT_EQ(toroid::base64_encode(bytes), text);
    EXPECT_EQ(toroid::base64_decode(text), std::optional<std::string>(bytes));
  }
}

TEST(Base64, EveryByteRoundTrips) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t n = 0; n <= bytes.size(); n += 37)
    EXPECT_EQ(toroid::base64_decode(toroid::base64_encode(bytes.substr(0, n))), bytes.substr(0, n));
}

TEST(Base64, NotBase64IsRefused) {
  for (const char* text : {"Zg=", "Zg", "Z===", "Zm9v!A==", "Zg==Zm9v", "Z=g=", "Zm 9v"})
    EXPECT_EQ(toroid::base64_decode(text), std::nullopt) << text;
}

}  // namespace
