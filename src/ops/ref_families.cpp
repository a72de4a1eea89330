// Gathers the reference-kernel rows of every op family.
#include "toroid/ops/impl.h"

namespace toroid::ops {

std::vector<KernelImpl> all_kernel_impls() { return {}; }

}  // namespace toroid::ops
