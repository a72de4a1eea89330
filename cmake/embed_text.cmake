# Writes OUTPUT, a C++ source defining `const std::string& FUNCTION()` in NAMESPACE that returns
# the text of INPUT (the kernel preludes, compiled into the binary), as a raw string literal.
# cmake -DINPUT=... -DOUTPUT=... -DNAMESPACE=... -DFUNCTION=... -P embed_text.cmake
file(READ "${INPUT}" text)
set(delimiter "toroid_embedded")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )${delimiter}\"")
endif()
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${name} by cmake/embed_text.cmake: do not edit.
#include <string>

namespace ${NAMESPACE} {

const std::string& ${FUNCTION}() {
  static const std::string text = R\"${delimiter}(${text})${delimiter}\";
  return text;
}

}  // namespace ${NAMESPACE}
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
