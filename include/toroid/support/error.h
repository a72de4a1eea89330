// Errors. A UserError is bad input (a message for the user, with where it went wrong);
// an InternalError is a bug in toroid. Neither aborts: tools catch them at the top.
#pragma once

#include <stdexcept>
#include <string>

namespace toroid {

struct SourceLoc {
  std::string file;  // empty when the input has no file (built in memory)
  int line = 0;      // 1-based; 0 when unknown
  int col = 0;       // 1-based; 0 when unknown

  bool known() const { return line > 0; }
  // "file:line:col" (parts that are unknown are left out).
  std::string str() const;
};

class UserError : public std::runtime_error {
 public:
  UserError(std::string message, SourceLoc loc = {});
  // For errors already formatted as diagnostic lines (several located problems at once).
  struct Preformatted {};
  UserError(Preformatted, std::string text);
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }

 private:
  std::string message_;
  SourceLoc loc_;
};

class InternalError : public std::logic_error {
 public:
  InternalError(std::string message, const char* file, int line);
};

[[noreturn]] void user_error(std::string message, SourceLoc loc = {});
// Throws a UserError whose what() is `text` as given ("file:line:col: error: ..." lines).
[[noreturn]] void user_error_preformatted(std::string text);
[[noreturn]] void internal_error(std::string message, const char* file, int line);

// Formats "file:line:col: error: message", the form every tool prints.
std::string format_diagnostic(const SourceLoc& loc, const std::string& message,
                              const char* severity = "error");

}  // namespace toroid

#define TOROID_INTERNAL_ERROR(msg) ::toroid::internal_error((msg), __FILE__, __LINE__)
#define TOROID_CHECK(cond, msg)                                                        \
  do {                                                                                 \
    if (!(cond)) ::toroid::internal_error(std::string("check failed: " #cond ": ") + (msg), \
                                          __FILE__, __LINE__);                         \
  } while (0)
