// Preparing inputs: laying logical values out with the graph's strides, and seeded random
// inputs for `toroidc run --random-inputs`.
#include <cmath>

#include "toroid/bind/binding.h"
#include "toroid/bind/inputs.h"
#include "toroid/ops/meta.h"
#include "toroid/ops/philox.h"
#include "toroid/ops/ref_util.h"

namespace toroid::bind {

using ops::HostTensor;
using ops::RtValue;

namespace {

// The meta's strides and offset under `b`, or contiguous at 0 where they cannot be evaluated.
// `input` is described only for a message (building its name for every call costs more than the
// rest of the check).
HostTensor lay_out(const HostTensor& logical, const Value* input, const ShapeEnv& env, const sym::Binding& b) {
  const TensorMeta& m = input->meta();
  std::vector<int64_t> strides;
  if (static_cast<int64_t>(m.strides.size()) == logical.dim()) {
    strides.reserve(m.strides.size());
    for (SymExpr e : m.strides)
      if (auto x = eval_int(env, e, b)) strides.push_back(*x);
  }
  if (strides.size() != m.strides.size() || static_cast<int64_t>(strides.size()) != logical.dim())
    strides = ops::contiguous_strides(logical.sizes());
  int64_t offset = eval_int(env, m.offset, b).value_or(0);
  for (int64_t s : strides)
    if (s < 0) user_error("input " + describe_input(input) + ": negative strides " + ints_str(strides) + " are not supported");
  if (offset < 0) user_error("input " + describe_input(input) + ": negative offset " + std::to_string(offset));
  bool same = offset == logical.offset();
  for (int64_t d = 0; d < logical.dim(); ++d)
    if (logical.sizes()[d] > 1 && logical.strides()[d] != strides[d]) same = false;
  if (same) return logical;
  const std::string what = describe_input(input);
  int64_t extent = offset;
  if (logical.numel() > 0) {
    extent = ops::checked_add("input " + what, extent, 1);
    for (int64_t d = 0; d < logical.dim(); ++d)
      extent = ops::checked_add("input " + what, extent, ops::checked_mul("input " + what, logical.sizes()[d] - 1, strides[d]));
  }
  HostTensor base = HostTensor::zeros(logical.dtype(), {extent});
  HostTensor t = base.as_strided(logical.sizes(), strides, offset);
  ops::copy_into("materialize input", t, logical);
  return t;
}

}  // namespace

std::vector<RtValue> materialize_inputs(const Graph& g, const std::vector<RtValue>& logical) {
  return materialize_inputs(g, graph_inputs(g), logical, bind_input_sizes(g, logical));
}

std::vector<RtValue> materialize_inputs(const Graph& g, const std::vector<const Value*>& values,
                                        const std::vector<RtValue>& logical, const sym::Binding& b) {
  std::vector<RtValue> out;
  out.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i]->is_tensor() && logical[i].is_tensor())
      out.emplace_back(lay_out(logical[i].tensor(), values[i], g.shape_env(), b));
    else
      out.push_back(logical[i]);
  }
  return out;
}

std::vector<RtValue> random_inputs(const Graph& g, uint64_t seed, RandomDist dist, std::vector<RtValue> given) {
  std::vector<const Value*> values = graph_inputs(g);
  if (given.empty()) given.resize(values.size());
  if (given.size() != values.size())
    user_error("graph @" + g.name() + " takes " + std::to_string(values.size()) + " inputs but " +
               std::to_string(given.size()) + " were given");
  const ShapeEnv& env = g.shape_env();
  // Symbols the given inputs determine (checked fully by the interpreter later), then hints.
  sym::Binding b;
  for (size_t i = 0; i < values.size(); ++i) {
    if (given[i].is_none()) continue;
    const Value* v = values[i];
    if (v->is_tensor() && given[i].is_tensor() && given[i].tensor().dim() == v->meta().rank()) {
      for (size_t d = 0; d < v->meta().sizes.size(); ++d)
        if (v->meta().sizes[d].is_symbol()) b.emplace(v->meta().sizes[d], sym::Scalar{sym::Type::Int, given[i].tensor().sizes()[d], 0});
    } else if (!v->is_tensor() && given[i].is_number() && !v->scalar_value().is_null() && v->scalar_value().is_symbol()) {
      sym::Scalar s;
      if (v->type() == ValueType::Float) {
        s.type = sym::Type::Float;
        s.f = given[i].to_double();
      } else {
        s.type = v->type() == ValueType::Bool ? sym::Type::Bool : sym::Type::Int;
        s.i = given[i].to_int();
      }
      b.emplace(v->scalar_value(), s);
    }
  }
  for (const sym::SymbolInfo& info : env.symbols()) {
    if (b.count(info.symbol)) continue;
    if (info.hint) b[info.symbol] = sym::Scalar{sym::Type::Int, *info.hint, 0};
    else if (info.float_hint) b[info.symbol] = sym::Scalar{sym::Type::Float, 0, *info.float_hint};
  }

  std::vector<RtValue> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!given[i].is_none()) {
      out.push_back(given[i]);
      continue;
    }
    const Value* v = values[i];
    // One Philox stream per input: block index = input number << 40 | element.
    const uint64_t stream = static_cast<uint64_t>(i) << 40;
    if (!v->is_tensor()) {
      SymExpr e = v->scalar_value();
      std::optional<sym::Scalar> s = e.is_null() ? std::nullopt : env.evaluate(e, b);
      ops::PhiloxBlock r = ops::philox_block(seed, stream);
      if (v->type() == ValueType::Float)
        out.push_back(RtValue::floating(s ? (s->type == sym::Type::Float ? s->f : double(s->i))
                                          : 2 * ops::uniform_f64(r[0], r[1]) - 1));
      else if (v->type() == ValueType::Bool)
        out.push_back(RtValue::boolean(s ? s->i != 0 : (r[0] & 1) != 0));
      else
        out.push_back(RtValue::integer(s ? s->i : static_cast<int64_t>(r[0] % 16) - 8));
      continue;
    }
    const TensorMeta& m = v->meta();
    std::vector<int64_t> sizes;
    for (SymExpr e : m.sizes) {
      std::optional<int64_t> x = eval_int(env, e, b);
      if (!x)
        user_error("input " + describe_input(v) + ": cannot choose a size for " + e.str() +
                       " (unbacked symbols have no hint; give the input with --input)",
                   v->node()->loc());
      if (*x < 0) user_error("input " + describe_input(v) + ": size " + e.str() + " = " + std::to_string(*x) + " is negative", v->node()->loc());
      sizes.push_back(*x);
    }
    HostTensor t = HostTensor::zeros(m.dtype, sizes);
    for (int64_t k = 0; k < t.numel(); ++k) {
      ops::PhiloxBlock r = ops::philox_block(seed, stream + static_cast<uint64_t>(k));
      auto draw = [&](const ops::PhiloxBlock& b) {
        return dist == RandomDist::Normal ? ops::normal_from_block(b) : 2 * ops::uniform_f64(b[0], b[1]) - 1;
      };
      if (is_complex(m.dtype)) {
        // The imaginary parts come from blocks of their own, half-way through the input's stream.
        ops::PhiloxBlock ri = ops::philox_block(seed, stream + (uint64_t{1} << 39) + static_cast<uint64_t>(k));
        ops::store_complex(m.dtype, t.data() + k * t.element_size(), {draw(r), draw(ri)});
      } else if (is_floating(m.dtype)) {
        t.set_double(k, draw(r));
      } else if (m.dtype == DType::Bool) {
        t.set_int(k, r[0] & 1);
      } else if (m.dtype == DType::UInt8) {
        t.set_int(k, r[0] % 16);
      } else {
        t.set_int(k, static_cast<int64_t>(r[0] % 16) - 8);
      }
    }
    out.emplace_back(lay_out(t, v, env, b));
  }
  return out;
}

}  // namespace toroid::bind
