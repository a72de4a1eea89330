// The top of every toroid command-line tool: runs its body and turns errors into the exit
// status and message every tool uses.
#pragma once

#include <functional>

namespace toroid {

// Exit 1 for bad input (UserError, file-system errors; the message as "file:line:col: error: ..."),
// 3 for internal errors (a bug), otherwise the body's own status.
int run_tool(const char* tool_name, const std::function<int()>& body);

}  // namespace toroid
