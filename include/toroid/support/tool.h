// The top of every toroid command-line tool: runs its body and turns errors into the exit
// status and message every tool uses.
#pragma once

#include <functional>
#include <string>

namespace toroid {

// Exit 1 for bad input (UserError, file-system errors; the message as "file:line:col: error: ..."),
// 3 for internal errors (a bug), otherwise the body's own status.
int run_tool(const char* tool_name, const std::function<int()>& body);

// The project's version ("0.2.0").
const char* version_string();

// "NAME VERSION" (the project's version) on standard output, for --version.
void print_version(const char* tool_name);

// A command-line mistake: "NAME: error: MESSAGE", the usage's first lines (up to its first blank
// line) and a pointer to --help on standard error; exit status 2.
[[noreturn]] void usage_error(const char* tool_name, const std::string& message, const char* usage);

}  // namespace toroid
