// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), the
// counter-based generator of toroid's random ops. See docs/random.md for how kernels use it.
#pragma once

#include <array>
#include <cstdint>

namespace toroid::ops {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;
using PhiloxBlock = std::array<uint32_t, 4>;

// The bijection itself: 10 rounds of the Philox-4x32 round function.
PhiloxBlock philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// Block number `index` of the stream with key `seed`: key = {seed low 32, seed high 32},
// counter = {index low 32, index high 32, 0, 0}.
PhiloxBlock philox_block(uint64_t seed, uint64_t index);

// Uniform in [0, 1) from the top 24 bits of a word (exactly representable in f32).
float uniform_f32(uint32_t w);
// Uniform in [0, 1) from the top 53 bits of the 64-bit word (hi << 32 | lo).
double uniform_f64(uint32_t lo, uint32_t hi);
// One standard normal from a block, by Box-Muller on two 53-bit uniforms (words 0,1 and 2,3):
// sqrt(-2 ln(1 - u1)) * cos(2 pi u2); 1 - u1 is in (0, 1], so the log is finite.
double normal_from_block(const PhiloxBlock& b);

}  // namespace toroid::ops
