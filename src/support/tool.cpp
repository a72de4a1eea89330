#include "toroid/support/tool.h"

#include <filesystem>
#include <iostream>

#include "toroid/support/error.h"

namespace toroid {

int run_tool(const char* tool_name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << tool_name << ": " << e.what() << "\n";
    return 3;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << tool_name << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << tool_name << ": internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace toroid
