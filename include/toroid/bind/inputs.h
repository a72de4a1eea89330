// Binding a graph's inputs: the symbols their sizes and scalar values determine (checked against
// the graph's ranges, divisors and guards), laying them out as the graph expects, and seeded
// random inputs. Shared by the interpreter, the driver and the tools.
#pragma once

#include <cstdint>
#include <vector>

#include "toroid/graph/graph.h"
#include "toroid/graph/inputs.h"
#include "toroid/ops/rt_value.h"
#include "toroid/sym/shape_env.h"

namespace toroid::bind {

// Binds the symbols that the inputs' sizes, strides and scalar values determine, then checks
// every size and stride (where the size is > 1), the symbol ranges and divisors, and every guard
// whose symbols are bound. UserError naming the input or guard on a mismatch.
sym::Binding bind_inputs(const Graph& g, const std::vector<ops::RtValue>& inputs);

// Lays each tensor out as its graph input's meta says (strides, offset), keeping its logical
// values: .npy files and random inputs are C-contiguous, graphs may expect transposed or
// strided inputs. Sizes must already match; scalars pass through.
std::vector<ops::RtValue> materialize_inputs(const Graph& g, const std::vector<ops::RtValue>& logical);
// The same for a call whose inputs are bound already (`b`), over graph_inputs(g) listed once by
// the caller: a run's hot path.
std::vector<ops::RtValue> materialize_inputs(const Graph& g, const std::vector<const Value*>& values,
                                             const std::vector<ops::RtValue>& logical, const sym::Binding& b);

enum class RandomDist { Uniform, Normal };
// Seeded random values (Philox) for the inputs whose entry in `given` is None (an empty `given`
// means all): floats uniform in [-1, 1) or standard normal, signed ints in [-8, 8), u8 in
// [0, 16), bools fair. Symbolic sizes come from the given inputs, else the symbol hints.
// Tensors get their meta's strides and offset.
std::vector<ops::RtValue> random_inputs(const Graph& g, uint64_t seed, RandomDist dist = RandomDist::Uniform,
                                        std::vector<ops::RtValue> given = {});

}  // namespace toroid::bind
