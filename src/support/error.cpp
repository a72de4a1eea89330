#include "toroid/support/error.h"

namespace toroid {

std::string SourceLoc::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (col > 0) out += ":" + std::to_string(col);
  }
  return out;
}

UserError::UserError(std::string message, SourceLoc loc)
    : std::runtime_error(format_diagnostic(loc, message)),
      message_(std::move(message)),
      loc_(std::move(loc)) {}

UserError::UserError(Preformatted, std::string text) : std::runtime_error(text), message_(std::move(text)) {}

InternalError::InternalError(std::string message, const char* file, int line)
    : std::logic_error("internal error: " + message + " (at " + file + ":" + std::to_string(line) +
                       ")") {}

void user_error(std::string message, SourceLoc loc) { throw UserError(std::move(message), std::move(loc)); }

void user_error_preformatted(std::string text) { throw UserError(UserError::Preformatted{}, std::move(text)); }

void internal_error(std::string message, const char* file, int line) {
  throw InternalError(std::move(message), file, line);
}

std::string format_diagnostic(const SourceLoc& loc, const std::string& message, const char* severity) {
  return loc.str() + ": " + severity + ": " + message;
}

}  // namespace toroid
