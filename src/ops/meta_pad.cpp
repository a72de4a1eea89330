// Meta functions of padding and resampling: constant_pad_nd (negative pads narrow),
// reflection_pad1d/2d/3d, replication_pad2d/3d, upsample_bilinear2d.vec and
// upsample_nearest2d.vec (output_size or scale_factors), grid_sampler_2d.
//
// Layouts: constant_pad_nd keeps the input's suggested memory format (a pad with no positive
// entry is a clone of the narrowed input, preserving its layout); the upsample ops keep the
// input's suggested format; the reflection/replication pads and grid_sampler_2d are contiguous.
#include <cmath>

#include "meta_families.h"
#include "meta_helpers.h"

namespace toroid::ops {
namespace {

using namespace meta;
using Results = std::vector<ResultSpec>;

Results constant_pad_nd(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> pad = a.int_list("pad");
  if (pad.size() % 2 != 0) ctx.fail("Length of pad must be even but instead it equals " + std::to_string(pad.size()));
  size_t rank = x.sizes.size(), npad = pad.size() / 2;
  if (npad > rank)
    ctx.fail("Length of pad should be no more than twice the number of dimensions of the input. Pad length is " +
             std::to_string(pad.size()) + " while the input has " + std::to_string(rank) + " dimensions.");
  size_t first = rank - npad;
  // Negative pads narrow the input; a view of it is what a pad with no positive entry clones.
  TensorMeta narrowed = x;
  bool all_non_positive = true;
  std::vector<SymExpr> out = x.sizes;
  for (size_t i = first; i < rank; ++i) {
    size_t pi = 2 * (rank - i - 1);
    SymExpr lo = pad[pi], hi = pad[pi + 1];
    if (holds(ctx, sym::lt(lo, I(0)))) {
      narrowed.offset = simp(ctx, narrowed.offset - lo * narrowed.strides[i]);
      narrowed.sizes[i] = simp(ctx, narrowed.sizes[i] + lo);
    } else if (!is_eq(ctx, lo, I(0))) {
      all_non_positive = false;
    }
    if (holds(ctx, sym::lt(hi, I(0)))) narrowed.sizes[i] = simp(ctx, narrowed.sizes[i] + hi);
    else if (!is_eq(ctx, hi, I(0))) all_non_positive = false;
    out[i] = simp(ctx, x.sizes[i] + lo + hi);
    check(ctx, sym::le(I(0), out[i]), [&] {
      return "The input size " + x.sizes[i].str() + ", plus negative padding " + lo.str() + " and " + hi.str() +
             " resulted in a negative output size, which is invalid. Check dimension " + std::to_string(i) +
             " of your input.";
    });
  }
  if (all_non_positive)
    return {ResultSpec::tensor(fresh(ctx, x.dtype, x.device, narrowed.sizes, preserve_strides(ctx, narrowed)))};
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, out, suggest_memory_format(ctx, x)))};
}

// padding::check_valid_input<n>: an (n+1)-d input, or (n+2)-d with a possibly empty batch.
void check_pad_input(MetaContext& ctx, const TensorMeta& x, size_t n, const std::vector<SymExpr>& padding) {
  if (padding.size() != 2 * n)
    ctx.fail("padding size is expected to be " + std::to_string(2 * n) + ", but got: " + std::to_string(padding.size()));
  int64_t r = x.rank();
  bool batch = r == static_cast<int64_t>(n) + 2;
  bool ok = batch || r == static_cast<int64_t>(n) + 1;
  for (int64_t d = batch ? 1 : 0; ok && d < r; ++d) ok = !holds(ctx, sym::eq(x.sizes[static_cast<size_t>(d)], I(0)));
  if (!ok)
    ctx.fail("Expected " + std::to_string(n + 1) + "D or " + std::to_string(n + 2) +
             "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: " +
             shape_str(x.sizes));
}

// Reflection and replication pads over the last n dims; padding is (left, right, top, bottom,
// front, back), the last dim first.
Results pad_nd(const BoundArgs& a, MetaContext& ctx, size_t n, bool reflect) {
  const TensorMeta& x = tensor_arg(a, ctx, "self");
  std::vector<SymExpr> padding = a.int_list("padding");
  check_pad_input(ctx, x, n, padding);
  std::vector<SymExpr> out = x.sizes;
  size_t rank = x.sizes.size();
  static const char* const arg_no[] = {"#4", "#6", "#8"};
  for (size_t j = 0; j < n; ++j) {  // j = 0: the last dim
    size_t d = rank - 1 - j;
    SymExpr in = x.sizes[d], lo = padding[2 * j], hi = padding[2 * j + 1];
    if (reflect && !(is_lt(ctx, lo, in) && is_lt(ctx, hi, in)))
      ctx.fail(std::string("Argument ") + arg_no[j] +
               ": Padding size should be less than the corresponding input dimension, but got: padding (" + lo.str() +
               ", " + hi.str() + ") at dimension " + std::to_string(d) + " of input " + shape_str(x.sizes));
    out[d] = simp(ctx, in + lo + hi);
  }
  std::vector<SymExpr> in_sp(x.sizes.end() - static_cast<std::ptrdiff_t>(n), x.sizes.end());
  std::vector<SymExpr> out_sp(out.end() - static_cast<std::ptrdiff_t>(n), out.end());
  std::vector<SymExpr> conds;
  for (SymExpr o : out_sp) conds.push_back(sym::le(I(1), o));
  check(ctx, sym::logical_and(conds), [&] {
    static const char* const names[] = {"D", "H", "W"};
    std::string in_s, out_s;
    for (size_t i = 0; i < n; ++i) {
      const char* nm = names[3 - n + i];
      in_s += std::string(i ? ", " : "") + nm + ": " + in_sp[i].str();
      out_s += std::string(i ? " " : "") + nm + ": " + out_sp[i].str();
    }
    return "input (" + in_s + ") is too small. Calculated output " + out_s;
  });
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

Results reflection_pad1d(const BoundArgs& a, MetaContext& ctx) { return pad_nd(a, ctx, 1, true); }
Results reflection_pad2d(const BoundArgs& a, MetaContext& ctx) { return pad_nd(a, ctx, 2, true); }
Results reflection_pad3d(const BoundArgs& a, MetaContext& ctx) { return pad_nd(a, ctx, 3, true); }
Results replication_pad2d(const BoundArgs& a, MetaContext& ctx) { return pad_nd(a, ctx, 2, false); }
Results replication_pad3d(const BoundArgs& a, MetaContext& ctx) { return pad_nd(a, ctx, 3, false); }

// The float[]? scale_factors argument (empty when None).
std::vector<double> float_list(const BoundArgs& a, MetaContext& ctx, const char* name) {
  const Argument& arg = a.get(name);
  std::vector<double> out;
  if (arg.is_none()) return out;
  if (!arg.is_list()) ctx.fail(std::string("argument '") + name + "' must be a list of floats");
  for (const Argument& e : arg.list()) {
    if (!e.is_scalar()) ctx.fail(std::string("argument '") + name + "' must be a list of floats");
    SymExpr v = e.scalar();
    if (auto c = v.as_int()) out.push_back(static_cast<double>(*c));
    else if (v.kind() == sym::Kind::FloatConst) out.push_back(v.float_value());
    else ctx.fail(std::string("argument '") + name + "' must be a list of constant floats");
  }
  return out;
}

// size * scale truncated to an integer, as PyTorch's compute_output_size (a double product).
// For a symbolic size the scale, a dyadic rational p / 2^e, gives floor(size * p / 2^e).
SymExpr scaled_size(MetaContext& ctx, SymExpr size, double scale) {
  if (!(scale > 0) || !std::isfinite(scale)) ctx.fail("scale_factors must be positive and finite, got " + std::to_string(scale));
  if (auto c = size.as_int()) {
    double o = static_cast<double>(*c) * scale;
    if (o >= 9.2e18) ctx.fail("upsample: output size " + std::to_string(o) + " does not fit in int64");
    return I(static_cast<int64_t>(o));
  }
  int exp = 0;
  double mant = std::frexp(scale, &exp);  // scale = mant * 2^exp, mant in [0.5, 1)
  int64_t num = static_cast<int64_t>(std::ldexp(mant, 53));
  int shift = 53 - exp;  // scale = num / 2^shift
  while (shift > 0 && num % 2 == 0) {
    num /= 2;
    --shift;
  }
  if (shift <= 0) {
    double mult = std::ldexp(static_cast<double>(num), -shift);
    if (mult > 1e15) ctx.fail("upsample: scale factor " + std::to_string(scale) + " is too large");
    return simp(ctx, size * static_cast<int64_t>(mult));
  }
  if (shift > 30 || num > (int64_t{1} << 31))
    ctx.fail("upsample: scale factor " + std::to_string(scale) + " is not supported with a symbolic input size " +
             size.str());
  return simp(ctx, sym::floordiv(size * num, I(int64_t{1} << shift)));
}

Results upsample2d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  bool has_size = !a.is_none("output_size"), has_scale = !a.is_none("scale_factors");
  if (has_size == has_scale) ctx.fail("Must specify exactly one of output_size and scale_factors");
  if (x.rank() != 4) ctx.fail("It is expected input_size equals to 4, but got size " + std::to_string(x.rank()));
  std::vector<SymExpr> osize;
  if (has_size) {
    osize = a.int_list("output_size");
    if (osize.size() != 2) ctx.fail("It is expected output_size equals to 2, but got size " + std::to_string(osize.size()));
  } else {
    std::vector<double> sf = float_list(a, ctx, "scale_factors");
    if (sf.size() != 2) ctx.fail("expected 2 scale_factors for a 4-d input, got " + std::to_string(sf.size()));
    for (size_t i = 0; i < 2; ++i) osize.push_back(scaled_size(ctx, x.sizes[2 + i], sf[i]));
  }
  check(ctx, sym::logical_and(std::vector<SymExpr>{sym::lt(I(0), x.sizes[2]), sym::lt(I(0), x.sizes[3]),
                                                  sym::lt(I(0), osize[0]), sym::lt(I(0), osize[1])}),
        [&] {
          return "Input and output sizes should be greater than 0, but got input (H: " + x.sizes[2].str() +
                 ", W: " + x.sizes[3].str() + ") output (H: " + osize[0].str() + ", W: " + osize[1].str() + ")";
        });
  check(ctx, sym::lt(I(0), x.sizes[1]), [&] {
    return "Non-empty 4D data tensor expected but got a tensor with sizes " + shape_str(x.sizes);
  });
  if (!is_floating(x.dtype) && a.schema().name == "upsample_bilinear2d")
    ctx.fail(std::string("\"upsample_bilinear2d\" not implemented for '") + dtype_short_name(x.dtype) + "'");
  std::vector<SymExpr> out{x.sizes[0], x.sizes[1], osize[0], osize[1]};
  return {ResultSpec::tensor(fresh_format(ctx, x.dtype, x.device, out, suggest_memory_format(ctx, x)))};
}

Results grid_sampler_2d(const BoundArgs& a, MetaContext& ctx) {
  const TensorMeta& x = tensor_arg(a, ctx, "input");
  const TensorMeta& g = tensor_arg(a, ctx, "grid");
  if (!(x.device == g.device))
    ctx.fail("grid_sampler(): expected input and grid to be on same device, but input is on " + x.device.str() +
             " and grid is on " + g.device.str());
  if (x.rank() != 4 || g.rank() != 4)
    ctx.fail("grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with sizes " +
             shape_str(x.sizes) + " and grid with sizes " + shape_str(g.sizes));
  if (!is_eq(ctx, x.sizes[0], g.sizes[0]))
    ctx.fail("grid_sampler(): expected grid and input to have same batch size, but got input with sizes " +
             shape_str(x.sizes) + " and grid with sizes " + shape_str(g.sizes));
  if (!is_eq(ctx, g.sizes[3], I(2)))
    ctx.fail("grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes " +
             shape_str(g.sizes));
  for (size_t i = 2; i < 4; ++i)
    if (!holds(ctx, sym::lt(I(0), x.sizes[i])))
      ctx.fail("grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes " +
               shape_str(x.sizes) + " with dimension " + std::to_string(i) + " being empty");
  if (!is_floating(x.dtype) || x.dtype != g.dtype)
    ctx.fail(std::string("grid_sampler(): expected input and grid to have the same floating dtype, but got ") +
             dtype_short_name(x.dtype) + " and " + dtype_short_name(g.dtype));
  int64_t interp = const_int(ctx, a.scalar("interpolation_mode"), "interpolation_mode");
  int64_t padding = const_int(ctx, a.scalar("padding_mode"), "padding_mode");
  if (interp < 0 || interp > 2)
    ctx.fail("grid_sampler(): expected interpolation_mode to be 0 (bilinear), 1 (nearest) or 2 (bicubic), got " +
             std::to_string(interp));
  if (padding < 0 || padding > 2)
    ctx.fail("grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) or 2 (reflection), got " +
             std::to_string(padding));
  std::vector<SymExpr> out{x.sizes[0], x.sizes[1], g.sizes[1], g.sizes[2]};
  return {ResultSpec::tensor(fresh_contiguous(ctx, x.dtype, x.device, out))};
}

}  // namespace

std::vector<MetaImpl> pad_meta_impls() {
  return {
      {"aten.constant_pad_nd.default", constant_pad_nd},
      {"aten.reflection_pad1d.default", reflection_pad1d},
      {"aten.reflection_pad2d.default", reflection_pad2d},
      {"aten.reflection_pad3d.default", reflection_pad3d},
      {"aten.replication_pad2d.default", replication_pad2d},
      {"aten.replication_pad3d.default", replication_pad3d},
      {"aten.upsample_bilinear2d.vec", upsample2d},
      {"aten.upsample_nearest2d.vec", upsample2d},
      {"aten.grid_sampler_2d.default", grid_sampler_2d},
  };
}

}  // namespace toroid::ops
