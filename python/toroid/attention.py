"""scaled_dot_product_attention as ops toroid compiles: two batched matmuls (cuBLASLt / the CPU's
GEMM) around one fused scale + mask + softmax kernel, instead of the eager kernel that would
split the graph at every attention layer; or, over the size limit, toroid's fused attention op.

dynamo hands the backend `torch._C._nn.scaled_dot_product_attention` calls; `decompose_attention`
replaces each by `sdpa_math`, which AOTAutograd then traces (and differentiates) like any other
code. The score matrix (batch x heads x queries x keys, fp32) is materialized, so a call whose
scores would exceed `config.attention_max_score_bytes` is left whole: at GPT-2's and BERT's
sizes (128 tokens: 0.75 MiB per layer and sequence) the matmuls are the fast path, and at long
sequences a flash kernel's memory use is what matters. AOTAutograd traces such a call to ATen's
fused op, which `fuse_attention_calls` turns into aten.scaled_dot_product_attention (toroid's
flash-style kernel) where only its result is read.

Numerics follow PyTorch's fused kernels rather than its math fallback: fp16/bf16 inputs are
multiplied and normalized in fp32 (rounded once, at the output; the CPU has no bf16 matmul
library in toroid either), and a row whose keys are all masked gives zeros, not NaN.
"""
from __future__ import annotations

import math
import operator
from typing import Any, Optional

_KEYWORDS = ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}


def _scores(query, key, attn_mask, is_causal, scale, low):
    """The scaled (and masked) score matrix in fp32 for 16-bit inputs, and whether a mask that
    can empty a row was applied."""
    import torch
    L, S, E = query.size(-2), key.size(-2), query.size(-1)
    q, k = (query.float(), key.float()) if low else (query, key)
    factor = 1.0 / math.sqrt(E) if scale is None else scale
    scores = torch.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        rows = torch.arange(L, device=query.device).unsqueeze(-1)
        cols = torch.arange(S, device=query.device)
        return scores.masked_fill(cols > rows, float("-inf")), False
    if attn_mask is None:
        return scores, False
    if attn_mask.dtype == torch.bool:
        return scores.masked_fill(attn_mask.logical_not(), float("-inf")), True
    return scores + attn_mask.to(scores.dtype), True


def sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
              with_logsumexp=False):
    """F.scaled_dot_product_attention's result from matmul, softmax and pointwise ops (and the
    scores' fp32 log-sum-exp per query, batch x heads x queries, when with_logsumexp)."""
    import torch
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: attn_mask and is_causal=True are exclusive")
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        groups = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    out_dtype = query.dtype
    low = out_dtype in (torch.float16, torch.bfloat16)
    scores, masked = _scores(query, key, attn_mask, is_causal, scale, low)
    probs = torch.softmax(scores, dim=-1)
    if masked:  # a row with every key masked: zeros, as the fused kernels give (softmax: NaN)
        empty = scores.amax(dim=-1, keepdim=True) == float("-inf")
        probs = probs.masked_fill(empty, 0.0)
    if dropout_p > 0.0:
        probs = torch.dropout(probs, dropout_p, True)
    out = torch.matmul(probs, value.float() if low else value).to(out_dtype)
    if with_logsumexp:
        return out, _logsumexp_rows(scores.float())
    return out


def _logsumexp_rows(scores):
    """torch.logsumexp(scores, -1) written with the ops it is made of: aten.logsumexp is no core
    ATen op, and a table of only these decompositions (make_fx with them) would leave it to
    eager. A row's infinite max is taken as 0 (all -inf: -inf; a +inf: +inf), as torch does."""
    import torch
    m = scores.amax(dim=-1, keepdim=True)
    m = torch.where(m.abs() == float("inf"), torch.zeros_like(m), m)
    return (scores - m).exp().sum(dim=-1).log() + m.squeeze(-1)


def attention_backward(grad_out, query, key, value, attn_mask, out, is_causal=False, scale=None):
    """The gradients of sdpa_math's result (without dropout) with respect to query, key and value,
    and the scores' gradient (an additive mask's, before its broadcast is summed): the softmax
    recomputed from the inputs, as the fused kernels' backward recompute it, in fp32 for 16-bit
    inputs. dS = P * (dP - rowsum(dO * O)), with dP = dO V^T."""
    import torch
    low = query.dtype in (torch.float16, torch.bfloat16)
    scores, masked = _scores(query, key, attn_mask, is_causal, scale, low)
    probs = torch.softmax(scores, dim=-1)
    if masked:
        empty = scores.amax(dim=-1, keepdim=True) == float("-inf")
        probs = probs.masked_fill(empty, 0.0)
    q, k, v, g, o = ((t.float() if low else t) for t in (query, key, value, grad_out, out))
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    grad_v = torch.matmul(probs.transpose(-2, -1), g)
    grad_p = torch.matmul(g, v.transpose(-2, -1))
    grad_s = probs * (grad_p - (g * o).sum(dim=-1, keepdim=True))
    grad_q = torch.matmul(grad_s, k) * factor
    grad_k = torch.matmul(grad_s.transpose(-2, -1), q) * factor
    return grad_q.to(query.dtype), grad_k.to(key.dtype), grad_v.to(value.dtype), grad_s


def _targets():
    import torch
    found = []
    for owner, name in ((torch.nn.functional, "scaled_dot_product_attention"),
                        (torch._C._nn, "scaled_dot_product_attention")):
        f = getattr(owner, name, None)
        if f is not None and f not in found:
            found.append(f)
    op = getattr(torch.ops.aten, "scaled_dot_product_attention", None)
    if op is not None:
        found.append(op.default)
    return tuple(found)


def _size_hint(s) -> Optional[int]:
    if isinstance(s, int):
        return s
    node = getattr(s, "node", None)
    hint = getattr(node, "hint", None)
    return int(hint) if hint is not None else None


def _example(n) -> Any:
    """The node's example value (dynamo: example_value; make_fx: val; ShapeProp: tensor_meta)."""
    meta = getattr(n, "meta", None) or {}
    for key in ("example_value", "val", "tensor_meta"):
        if meta.get(key) is not None:
            return meta[key]
    return None


def score_bytes(query, key) -> Optional[int]:
    """Bytes of the fp32 score matrix a call with these (example) tensors materializes; None when
    a size has no hint."""
    sizes = [_size_hint(s) for s in list(query.shape[:-1]) + [key.shape[-2]]]
    if any(s is None for s in sizes):
        return None
    return 4 * math.prod(sizes)


def _arguments(n):
    """(query, key, value, keyword values) of an attention node, or None when its arguments are
    not the documented ones."""
    args, kwargs = list(n.args), dict(n.kwargs)
    if len(args) < 3 or len(args) > 3 + len(_KEYWORDS) or set(kwargs) - set(_KEYWORDS):
        return None
    values = dict(_DEFAULTS)
    for name, a in zip(_KEYWORDS, args[3:]):
        values[name] = a
    values.update(kwargs)
    return args[0], args[1], args[2], values


def decompose_attention(gm, max_score_bytes: Optional[int] = None) -> list[str]:
    """Replaces gm's attention calls by sdpa_math where the scores fit `max_score_bytes`
    (default: config.attention_max_score_bytes). Returns a line per call left alone, saying why."""
    from . import config
    limit = config.attention_max_score_bytes if max_score_bytes is None else max_score_bytes
    targets = _targets()
    kept = []
    changed = False
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in targets:
            continue
        parsed = _arguments(n)
        if parsed is None:
            kept.append("%s: arguments not understood" % n.name)
            continue
        q, k, v, kw = parsed
        qv, kv = _example(q), _example(k)
        nbytes = score_bytes(qv, kv) if qv is not None and kv is not None else None
        if nbytes is None or nbytes > limit:
            size = "scores of unknown size" if nbytes is None else "scores of %d bytes over" % nbytes
            kept.append("%s: %s toroid.config.attention_max_score_bytes (%d): PyTorch's fused kernel" % (
                n.name, size, limit))
            continue
        n.target = sdpa_math
        n.args, n.kwargs = (q, k, v), kw
        changed = True
    if changed:
        gm.graph.lint()
        gm.recompile()
    return kept


def fused_attention_decompositions(max_score_bytes: Optional[int] = None, torch_own: Optional[dict] = None) -> dict:
    """AOTAutograd decompositions of ATen's fused attention ops, the kernels
    F.scaled_dot_product_attention dispatches to when it is traced below dynamo (an
    nn.MultiheadAttention's inference fast path reaches them so, never passing through
    decompose_attention): the attention as sdpa_math, and the backward ops as attention_backward
    (a training graph's joint trace holds the fused forward and its backward: both decomposed,
    nothing of them is left to PyTorch). A call declines (NotImplemented: the op stays and PyTorch
    runs it) for dropout, a debug mask, cuDNN's op asked for its log-sum-exp (its backward is not
    decomposed), a mask together with is_causal, or where the scores exceed the size limit (as
    decompose_attention). The CPU's flash op of an inference graph over the limit stays whole for
    fuse_attention_calls; where ours declines it otherwise, torch's own decomposition of it (in
    `torch_own`, op -> function) runs, as it did before. Ops this torch lacks are left out."""
    torch_own = torch_own or {}
    import torch
    from . import config
    aten = torch.ops.aten

    def over_limit(query, key):
        limit = config.attention_max_score_bytes if max_score_bytes is None else max_score_bytes
        nbytes = score_bytes(query, key)
        return nbytes is None or nbytes > limit

    def declines(query, key, dropout_p, *flags):
        if query.dim() != 4 or key.dim() != 4 or dropout_p != 0.0 or any(flags):
            return True
        return over_limit(query, key)

    def backward_decomposed(name):
        # A forward decomposed for a backward hands its log-sum-exp to that backward: only where
        # the backward op is decomposed too (ATen's would read it as its own kernel's).
        return getattr(aten, name, None) is not None

    def scalar(query):  # a philox seed or offset without dropout: unused
        return query.new_empty((), dtype=torch.int64)

    def nothing(query):
        return query.new_empty((0,))

    def efficient(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None):
        if declines(query, key, dropout_p, is_causal and attn_bias is not None,
                    compute_log_sumexp and not backward_decomposed("_scaled_dot_product_efficient_attention_backward")):
            return NotImplemented
        if not compute_log_sumexp:
            out = sdpa_math(query, key, value, attn_bias, 0.0, is_causal, scale)
            no_lse = query.new_empty((query.size(0), query.size(1), 0), dtype=torch.float32)
            return out, no_lse, scalar(query), scalar(query)
        # For a backward: the log-sum-exp only its decomposition below reads (it recomputes).
        out, lse = sdpa_math(query, key, value, attn_bias, 0.0, is_causal, scale, with_logsumexp=True)
        return out, lse, scalar(query), scalar(query)

    def efficient_backward(grad_out, query, key, value, attn_bias, out, logsumexp, philox_seed, philox_offset,
                           dropout_p, grad_input_mask, is_causal=False, *, scale=None):
        if declines(query, key, dropout_p, is_causal and attn_bias is not None):
            return NotImplemented
        grad_q, grad_k, grad_v, grad_s = attention_backward(grad_out, query, key, value, attn_bias, out, is_causal,
                                                            scale)
        grad_bias = None
        if attn_bias is not None and len(grad_input_mask) > 3 and grad_input_mask[3]:
            grad_bias = grad_s.sum_to_size(attn_bias.shape).to(attn_bias.dtype)
        return grad_q, grad_k, grad_v, grad_bias

    def flash(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
        for_backward = torch.is_grad_enabled()
        if declines(query, key, dropout_p, return_debug_mask,
                    for_backward and not backward_decomposed("_scaled_dot_product_flash_attention_backward")):
            return NotImplemented
        out, lse = sdpa_math(query, key, value, None, 0.0, is_causal, scale, with_logsumexp=True)
        return (out, lse, nothing(query), nothing(query), query.size(-2), key.size(-2), nothing(query),
                nothing(query), nothing(query))

    def flash_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
                       is_causal, philox_seed, philox_offset, *, scale=None):
        if declines(query, key, dropout_p):
            return NotImplemented
        return attention_backward(grad_out, query, key, value, None, out, is_causal, scale)[:3]

    def cudnn(query, key, value, attn_bias, compute_log_sumexp, dropout_p=0.0, is_causal=False,
              return_debug_mask=False, *, scale=None):
        if declines(query, key, dropout_p, compute_log_sumexp, return_debug_mask, is_causal and attn_bias is not None):
            return NotImplemented
        out, lse = sdpa_math(query, key, value, attn_bias, 0.0, is_causal, scale, with_logsumexp=True)
        return (out, lse, nothing(query), nothing(query), query.size(-2), key.size(-2), scalar(query), scalar(query),
                nothing(query))

    def flash_cpu(query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
        for_backward = torch.is_grad_enabled()
        if not for_backward and dropout_p == 0.0 and query.dim() == 4 and over_limit(query, key):
            return NotImplemented  # an inference graph's: fuse_attention_calls makes it toroid's fused op
        if declines(query, key, dropout_p, is_causal and attn_mask is not None,
                    for_backward and not backward_decomposed("_scaled_dot_product_flash_attention_for_cpu_backward")):
            own = torch_own.get(aten._scaled_dot_product_flash_attention_for_cpu.default)
            return NotImplemented if own is None else own(query, key, value, dropout_p, is_causal,
                                                          attn_mask=attn_mask, scale=scale)
        return sdpa_math(query, key, value, attn_mask, 0.0, is_causal, scale, with_logsumexp=True)

    def flash_cpu_backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
                           scale=None):
        if declines(query, key, dropout_p, is_causal and attn_mask is not None):
            return NotImplemented
        return attention_backward(grad_out, query, key, value, attn_mask, out, is_causal, scale)[:3]

    table = {}
    for name, fn in (("_scaled_dot_product_efficient_attention", efficient),
                     ("_scaled_dot_product_efficient_attention_backward", efficient_backward),
                     ("_scaled_dot_product_flash_attention", flash),
                     ("_scaled_dot_product_flash_attention_backward", flash_backward),
                     ("_scaled_dot_product_cudnn_attention", cudnn),
                     ("_scaled_dot_product_flash_attention_for_cpu", flash_cpu),
                     ("_scaled_dot_product_flash_attention_for_cpu_backward", flash_cpu_backward)):
        packet = getattr(aten, name, None)
        if packet is not None:
            table[packet.default] = fn
    return table


# ATen's fused attention ops whose first result is the attention itself: (op name, the name of
# its mask argument or None).
_FUSED_FORWARDS = (("_scaled_dot_product_efficient_attention", "attn_bias"),
                   ("_scaled_dot_product_flash_attention", None),
                   ("_scaled_dot_product_cudnn_attention", "attn_bias"),
                   ("_scaled_dot_product_flash_attention_for_cpu", "attn_mask"))


def _bound(n):
    """The node's arguments by schema name, defaults filled in."""
    schema = n.target._schema
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(n.args):
            out[a.name] = n.args[i]
        elif a.name in n.kwargs:
            out[a.name] = n.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
    return out


def _fusable(n, mask_name) -> Optional[str]:
    """Why fused-attention node n cannot become aten.scaled_dot_product_attention (None: it can)."""
    import torch
    if not n.users:
        return "its result is not read"
    if any(u.op != "call_function" or u.target is not operator.getitem or u.args[1] != 0 for u in n.users):
        return "a result other than the attention is read (a training graph's log-sum-exp)"
    args = _bound(n)
    if args.get("dropout_p", 0.0) != 0.0 or args.get("return_debug_mask", False):
        return "dropout or a debug mask"
    q, k, v = (_example(args[x]) for x in ("query", "key", "value"))
    mask = args.get(mask_name) if mask_name else None
    m = _example(mask) if mask is not None else None
    if any(t is None for t in (q, k, v)) or (mask is not None and m is None):
        return "operands without example values"
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "operands not 4-d"
    if mask is not None and args.get("is_causal", False):
        return "a mask together with is_causal"
    if m is not None and m.dtype != torch.bool and m.dtype != q.dtype:
        return "a mask of dtype %s for %s operands" % (m.dtype, q.dtype)
    traced = _example(next(iter(n.users)))
    if traced is None or getattr(q, "fake_mode", None) is None:
        return "no fake value of its result"
    if not traced.is_contiguous() and not _dense_in_order(traced, _stride_order(traced)):
        return "a result layout that is not dense"
    if q.device.type == "cuda":
        head = max(q.shape[-1], v.shape[-1])
        if head > 128:
            return "a head size over 128"
        if q.dtype == torch.float32 and head > 64:
            return "fp32 with a head size over 64 (toroid's tensor-core kernel stops at 64)"
    return None


def fuse_attention_calls(gm) -> list[str]:
    """Replaces ATen's fused attention ops in an ATen graph (what AOTAutograd leaves of a call
    whose scores are over config.attention_max_score_bytes) by aten.scaled_dot_product_attention,
    which toroid compiles to its own flash-style kernel, where only the attention result is read
    and, on CUDA, toroid's tensor-core kernel takes the operands. toroid's result is contiguous;
    where the traced result has another dense layout (the fused kernels write batch, query,
    head, column order), a permute-clone-permute gives that layout, so later views read what
    they read in eager. Returns a line per fused op left alone, saying why."""
    import torch
    aten = torch.ops.aten
    sdpa = getattr(aten, "scaled_dot_product_attention", None)
    if sdpa is None:
        return []
    targets = {}
    for name, mask_name in _FUSED_FORWARDS:
        packet = getattr(aten, name, None)
        if packet is not None:
            targets[packet.default] = mask_name
    kept, changed = [], False
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in targets:
            continue
        why = _fusable(n, targets[n.target])
        if why:
            kept.append("%s: %s" % (n.name, why))
            continue
        args = _bound(n)
        mask_name = targets[n.target]
        q, k = _example(args["query"]), _example(args["key"])
        traced = _example(next(iter(n.users)))
        mode = q.fake_mode
        kwargs = {"attn_mask": args.get(mask_name) if mask_name else None, "dropout_p": 0.0,
                  "is_causal": bool(args.get("is_causal", False)), "scale": args.get("scale")}
        if k.shape[1] != q.shape[1]:
            kwargs["enable_gqa"] = True
        with gm.graph.inserting_before(n):
            fused = gm.graph.call_function(sdpa.default, (args["query"], args["key"], args["value"]), kwargs)
            with mode:
                fused.meta["val"] = torch.empty(traced.shape, dtype=traced.dtype, device=traced.device)
            result = fused
            order = _stride_order(traced)
            if not traced.is_contiguous():
                back = [order.index(d) for d in range(traced.dim())]
                seq = [(aten.permute.default, (order,), {}),
                       (aten.clone.default, (), {"memory_format": torch.contiguous_format}),
                       (aten.permute.default, (back,), {})]
                for op, extra, kw in seq:
                    node = gm.graph.call_function(op, (result,) + extra, kw)
                    with mode:
                        node.meta["val"] = op(result.meta["val"], *extra, **kw)
                    result = node
        for u in list(n.users):
            u.replace_all_uses_with(result)
            gm.graph.erase_node(u)
        gm.graph.erase_node(n)
        changed = True
    if changed:
        gm.graph.lint()
        gm.recompile()
    return kept


def _stride_order(t) -> list[int]:
    """t's dims, largest stride first (ties: in dim order)."""
    return sorted(range(t.dim()), key=lambda d: -t.stride(d))


def _dense_in_order(t, order) -> bool:
    """Whether t's strides are those of a contiguous tensor whose dims, outermost first, are `order`."""
    step = 1
    for d in reversed(order):
        if t.size(d) != 1 and t.stride(d) != step:
            return False
        step *= t.size(d)
    return True
