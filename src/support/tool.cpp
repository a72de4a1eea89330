#include "toroid/support/tool.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>

#include "toroid/support/error.h"

namespace toroid {

int run_tool(const char* tool_name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UserError& e) {
    // An error with no place in an input file (a bad environment variable, a missing file) is
    // the tool's: "toroidc: error: ...", not "<input>: error: ...".
    bool placeless = e.loc().file.empty() && !e.loc().known() && e.message() != e.what();
    if (placeless) std::cerr << tool_name << ": error: " << e.message() << "\n";
    else std::cerr << e.what() << "\n";
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

const char* version_string() { return TOROID_VERSION_STRING; }

void print_version(const char* tool_name) { std::cout << tool_name << " " << TOROID_VERSION_STRING << "\n"; }

void usage_error(const char* tool_name, const std::string& message, const char* usage) {
  std::string_view u = usage;
  std::cerr << tool_name << ": error: " << message << "\n" << u.substr(0, u.find("\n\n") + 1) << "run '" << tool_name
            << " --help' for the options\n";
  std::exit(2);
}

}  // namespace toroid
