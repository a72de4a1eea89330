#include "toroid/support/env.h"

#include <cstdlib>
#include <string>

#include "toroid/support/error.h"

namespace toroid {

std::optional<bool> env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  std::string s = v;
  if (s == "0") return false;
  if (s == "1") return true;
  user_error(std::string(name) + "='" + s + "': 0 (off) or 1 (on)");
}

std::optional<int64_t> env_count(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  std::string s = v;
  bool digits = s.size() <= 13;
  for (char c : s) digits = digits && c >= '0' && c <= '9';
  int64_t n = digits ? std::stoll(s) : 0;
  if (n <= 0 || n > (int64_t{1} << 40)) user_error(std::string(name) + "='" + s + "': a positive integer");
  return n;
}

}  // namespace toroid
