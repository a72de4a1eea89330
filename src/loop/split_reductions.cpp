// Split reductions: a reduction with few output elements and a long reduced extent runs as two,
// so that it is not computed by a handful of threads (as Inductor's split reductions).
//
//   partial[o, s] = reduce_{q < chunk} body(o, f(s, q))    masked where s*chunk + q >= N
//   final[o]      = reduce_{s < S} partial[o, s]
//
// N is the product of the reduced sizes and f maps the flat position s*chunk + q back to the
// original reduction variables. The split count S is chosen from the size hints; the mask keeps
// the result right for every size (positions past N are clamped to N-1 so that masked lanes,
// which the emitters may still evaluate, load in bounds).
#include <algorithm>
#include <cmath>
#include <limits>

#include "toroid/loop/lower.h"
#include "toroid/support/log.h"

namespace toroid::loop {
namespace {

bool splittable(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::Any:
    case ReduceOp::All:
    case ReduceOp::Mean: return true;
    // These would need a (value, index) or Welford-state partial.
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
    case ReduceOp::Var: return false;
  }
  return false;
}

// The value a masked lane contributes: the reduction's identity in the body's dtype.
Expr identity(ReduceOp op, DType d) {
  bool fp = is_floating(d);
  switch (op) {
    case ReduceOp::Prod:
    case ReduceOp::All: return fp ? constant(1.0, d) : int_constant(1, d);
    case ReduceOp::Max:
      if (fp) return constant(-std::numeric_limits<double>::infinity(), d);
      if (d == DType::Bool) return int_constant(0, d);
      return int_constant(d == DType::UInt8 ? 0 : -(int64_t{1} << (8 * dtype_size(d) - 1)), d);
    case ReduceOp::Min:
      if (fp) return constant(std::numeric_limits<double>::infinity(), d);
      if (d == DType::Bool) return int_constant(1, d);
      if (d == DType::UInt8) return int_constant(255, d);
      return int_constant(d == DType::Int64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (8 * dtype_size(d) - 1)) - 1, d);
    default: return fp ? constant(0.0, d) : int_constant(0, d);
  }
}

std::vector<SymExpr> contiguous_strides(const std::vector<SymExpr>& sizes) {
  std::vector<SymExpr> strides(sizes.size(), SymExpr::integer(1));
  for (size_t k = sizes.size(); k-- > 1;) strides[k - 1] = strides[k] * sizes[k];
  return strides;
}

// How many pieces to cut the reduction into: 1 (none) unless the output is too small to keep
// the target busy and the reduced extent is long.
int64_t split_count(int64_t outputs, int64_t reduced, int64_t min_chunk, const SplitOptions& o) {
  if (outputs <= 0 || reduced < 2 * min_chunk || outputs * 2 > o.parallelism) return 1;
  int64_t by_work = reduced / min_chunk;
  int64_t by_parallelism = std::max<int64_t>(o.parallelism / outputs, 1);
  return std::max<int64_t>(std::min(by_work, by_parallelism), 1);
}

void split(LoopProgram& p, size_t at, int64_t pieces, int& next_id) {
  Buffer* b = p.buffers[at].get();
  const ShapeEnv& env = p.graph->shape_env();
  DType acc = b->body.dtype();
  SymExpr n = SymExpr::integer(1);
  for (SymExpr s : b->reduction_sizes) n = n * s;
  n = env.simplify(n);
  SymExpr chunk = env.simplify(sym::floordiv(n + (pieces - 1), SymExpr::integer(pieces)));
  size_t rank = b->sizes.size();
  SymExpr piece = index_var(rank);
  SymExpr flat = env.simplify(piece * chunk + reduction_var(0));
  bool exact = env.statically_known_true(sym::eq(chunk * pieces, n));
  SymExpr clamped = exact ? flat : sym::min(flat, n - 1);

  // The original reduction variables from the flat position (row-major over reduction_sizes).
  std::vector<SymExpr> rvars(b->reduction_sizes.size());
  SymExpr inner = SymExpr::integer(1);
  for (size_t k = b->reduction_sizes.size(); k-- > 0;) {
    SymExpr q = sym::floordiv(clamped, inner);
    rvars[k] = env.simplify(k == 0 ? q : sym::mod(q, b->reduction_sizes[k]));
    inner = inner * b->reduction_sizes[k];
  }
  Expr body = substitute(b->body, [&](SymExpr s) -> SymExpr {
    for (size_t k = 0; k < rvars.size(); ++k)
      if (s == reduction_var(k)) return rvars[k];
    return s;
  });
  if (!exact) body = where(binary(Op::Lt, index_value(flat), index_value(n)), body, identity(b->reduce, acc));

  auto part = std::make_unique<Buffer>();
  part->id = next_id++;
  part->name = "buf" + std::to_string(part->id);
  part->kind = BufferKind::Reduction;
  part->dtype = acc;
  part->device = b->device;
  part->sizes = b->sizes;
  part->sizes.push_back(SymExpr::integer(pieces));
  part->strides = contiguous_strides(part->sizes);
  part->storage_numel = SymExpr::integer(1);
  for (SymExpr s : part->sizes) part->storage_numel = part->storage_numel * s;
  part->storage_numel = env.simplify(part->storage_numel);
  part->body = body;
  part->reduction_sizes = {chunk};
  part->reduce = b->reduce == ReduceOp::Mean ? ReduceOp::Sum : b->reduce;
  part->origins = b->origins;
  Buffer* partial = part.get();

  std::vector<SymExpr> idx;
  for (size_t k = 0; k < rank; ++k) idx.push_back(index_var(k));
  idx.push_back(reduction_var(0));
  Expr combined = load(partial, env.simplify(position(partial->strides, partial->offset, idx)));
  // A mean sums the pieces' sums, each scaled by 1/N.
  if (b->reduce == ReduceOp::Mean) {
    combined = binary(Op::Div, combined, cast(index_value(n), acc));
    b->reduce = ReduceOp::Sum;
  }
  b->body = combined;
  b->reduction_sizes = {SymExpr::integer(pieces)};
  TOROID_LOG("lowering", "split reduction " + b->name + " (" + std::to_string(pieces) + " pieces of " + chunk.str() +
                             ") through " + partial->name);
  p.buffers.insert(p.buffers.begin() + static_cast<std::ptrdiff_t>(at), std::move(part));
}

}  // namespace

SplitOptions split_options_for(const LowerOptions& options) {
  // A GPU runs a row per block: two blocks per multiprocessor of a large GPU. A CPU runs a row
  // per thread, and a piece must be long enough to pay for the thread's start: 16384 adds of
  // streamed data, or 1024 gathers (cross entropy's picked logits: a cache miss each, ~20x an
  // add). Fixed numbers rather than this machine's, so that the generated code does not depend
  // on where it is made.
  if (options.target.is_cuda()) return SplitOptions{256, 1024, 1024};
  return SplitOptions{32, 16384, 1024};
}

void split_reductions(LoopProgram& p, const SplitOptions& o) {
  if (p.graph == nullptr) return;
  const ShapeEnv& env = p.graph->shape_env();
  int next_id = 0;
  for (const auto& b : p.buffers) next_id = std::max(next_id, b->id + 1);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    Buffer* b = p.buffers[i].get();
    if (b->kind != BufferKind::Reduction || !splittable(b->reduce) || b->reduction_sizes.empty()) continue;
    SymExpr outputs = SymExpr::integer(1), reduced = SymExpr::integer(1);
    for (SymExpr s : b->sizes) outputs = outputs * s;
    for (SymExpr s : b->reduction_sizes) reduced = reduced * s;
    std::optional<int64_t> out_hint = env.int_hint(outputs), red_hint = env.int_hint(reduced);
    if (!out_hint || !red_hint) continue;
    bool gathers = false;
    for (const Expr& l : loads(b->body)) gathers = gathers || l.op() == Op::IndirectLoad;
    int64_t pieces = split_count(*out_hint, *red_hint, gathers ? o.min_chunk_indirect : o.min_chunk, o);
    if (pieces < 2) continue;
    split(p, i, pieces, next_id);
    ++i;  // past the original, now the final combine
  }
}

}  // namespace toroid::loop
