// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the interchange format of
// `toroidc run --input/--output-dir`. bfloat16 is stored as '<u2' holding the raw bits: toroid has
// no uint16 dtype, so '<u2' always reads back as bf16 (docs/npy.md shows how to convert).
#pragma once

#include <string>
#include <string_view>

#include "toroid/ops/host_tensor.h"

namespace toroid::ops {

// Reads a .npy file; any malformed input is a UserError "path: ...".
HostTensor read_npy(const std::string& path);
// Writes t as a contiguous C-order .npy (version 1.0, or 2.0 if the header needs it), atomically.
void write_npy(const std::string& path, const HostTensor& t);

// In-memory forms; `name` prefixes error messages.
HostTensor parse_npy(std::string_view bytes, const std::string& name = "<npy>");
std::string serialize_npy(const HostTensor& t);

}  // namespace toroid::ops
