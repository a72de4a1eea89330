// Logging by topic. TOROID_LOG=passes,fusion (or "all") turns topics on; lines go to stderr
// as "[topic] message".
#pragma once

#include <string>
#include <string_view>

namespace toroid {

bool log_enabled(std::string_view topic);
void log_line(std::string_view topic, std::string_view message);
// For tests and tools: replaces the topics read from TOROID_LOG.
void set_log_topics(std::string_view comma_separated);

}  // namespace toroid

#define TOROID_LOG(topic, expr)                                             \
  do {                                                                      \
    if (::toroid::log_enabled(topic)) ::toroid::log_line((topic), (expr));  \
  } while (0)
