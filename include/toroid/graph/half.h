// IEEE binary16 (f16) and bfloat16 conversions, rounding to nearest even. Used by the text
// format to print 16-bit constants as floats and read them back.
#pragma once

#include <cstdint>

namespace toroid {

float f16_to_float(uint16_t bits);
uint16_t float_to_f16(float f);  // overflow gives inf; nan stays nan (quiet)
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float f);  // overflow gives inf; nan stays nan (quiet)

}  // namespace toroid
