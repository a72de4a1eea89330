"""Attention as toroid compiles it (python/toroid/attention.py): sdpa_math against a float64
reference written per (batch, head) row, toroid's compile of it (every op compiled, none left to
eager) on the CPU, and the graph rewrite of dynamo's scaled_dot_product_attention calls where
torch has them (>= 2.0). Exits 77 (skip) without torch.
"""
import math
import os
import sys
import unittest

try:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
except ImportError:
    print("torch is not installed: skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from toroid import attention  # noqa: E402
from toroid.runtime import compile_graph  # noqa: E402


def reference(q, k, v, mask=None, causal=False, scale=None, groups=1):
    """Row by row in float64: scores, masking, softmax (zeros for a row with no key), weights."""
    q, k, v = q.double(), k.double(), v.double()
    B, H, L, E = q.shape
    S = k.shape[-2]
    out = torch.zeros(B, H, L, v.shape[-1], dtype=torch.float64)
    factor = 1 / math.sqrt(E) if scale is None else scale
    for b in range(B):
        for h in range(H):
            kh, vh = k[b, h // groups], v[b, h // groups]
            for i in range(L):
                s = (kh @ q[b, h, i]) * factor
                allowed = torch.ones(S, dtype=torch.bool)
                if causal:
                    allowed = torch.arange(S) <= i
                elif mask is not None and mask.dtype == torch.bool:
                    allowed = mask.expand(B, H, L, S)[b, h, i]
                elif mask is not None:
                    s = s + mask.expand(B, H, L, S)[b, h, i].double()
                if not allowed.any():
                    continue
                s = s.masked_fill(~allowed, float("-inf"))
                w = torch.exp(s - s.max())
                out[b, h, i] = (w / w.sum()) @ vh
    return out


def inputs(dtype=torch.float32, B=2, H=4, L=5, S=7, E=8, KH=None):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, L, E, generator=g).to(dtype)
    k = torch.randn(B, KH or H, S, E, generator=g).to(dtype)
    v = torch.randn(B, KH or H, S, E, generator=g).to(dtype)
    return q, k, v


class SdpaMath(unittest.TestCase):
    def check(self, got, want, tol):
        self.assertEqual(got.shape, want.shape)
        self.assertFalse(torch.isnan(got).any().item())
        err = (got.double() - want).abs().max().item()
        self.assertLess(err, tol, "max abs error %g" % err)

    def test_plain_causal_scale(self):
        q, k, v = inputs()
        self.check(attention.sdpa_math(q, k, v), reference(q, k, v), 1e-5)
        q, k, v = inputs(L=7, S=7)
        self.check(attention.sdpa_math(q, k, v, is_causal=True), reference(q, k, v, causal=True), 1e-5)
        self.check(attention.sdpa_math(q, k, v, scale=0.3), reference(q, k, v, scale=0.3), 1e-5)

    def test_masks(self):
        q, k, v = inputs()
        g = torch.Generator().manual_seed(1)
        keep = torch.rand(2, 1, 5, 7, generator=g) > 0.4
        keep[0, 0, 2] = False  # a query that sees no key: zeros, not NaN
        self.check(attention.sdpa_math(q, k, v, attn_mask=keep), reference(q, k, v, mask=keep), 1e-5)
        bias = torch.randn(5, 7, generator=g)
        self.check(attention.sdpa_math(q, k, v, attn_mask=bias), reference(q, k, v, mask=bias), 1e-5)
        with self.assertRaises(ValueError):
            attention.sdpa_math(q, k, v, attn_mask=keep, is_causal=True)

    def test_grouped_query(self):
        q, k, v = inputs(H=4, KH=2)
        self.check(attention.sdpa_math(q, k, v, enable_gqa=True), reference(q, k, v, groups=2), 1e-5)

    def test_bf16_in_fp32(self):
        q, k, v = inputs(torch.bfloat16)
        got = attention.sdpa_math(q, k, v, is_causal=False)
        self.assertEqual(got.dtype, torch.bfloat16)
        self.check(got, reference(q, k, v), 2e-2)

    def test_logsumexp_without_the_aten_op(self):
        x = torch.randn(3, 4, 7) * 30
        x[0, 0] = float("-inf")  # every key masked: -inf
        x[0, 1, 2] = float("inf")
        x[1, 2, :3] = float("-inf")
        torch.testing.assert_close(attention._logsumexp_rows(x), torch.logsumexp(x, -1))
        q, k, v = inputs()
        _, lse = attention.sdpa_math(q, k, v, is_causal=True, with_logsumexp=True)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        causal = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        torch.testing.assert_close(lse, torch.logsumexp(scores.masked_fill(~causal, float("-inf")), -1))

    def test_score_bytes(self):
        q, k, _ = inputs(B=2, H=12, L=128, S=64)
        self.assertEqual(attention.score_bytes(q, k), 4 * 2 * 12 * 128 * 64)


class Compiled(unittest.TestCase):
    """toroid compiles the math form on the CPU: no op is left to eager."""

    def run_compiled(self, fn, args, tol):
        gm = make_fx(fn)(*args)
        compiled = compile_graph(gm, list(args), device="cpu")
        self.assertEqual(compiled.fallbacks, [], "ops left to eager")
        got = compiled(*args)
        got = got[0] if isinstance(got, (list, tuple)) else got
        want = fn(*args)
        err = (got.double() - want.double()).abs().max().item()
        self.assertLess(err, tol, "max abs error %g" % err)

    def test_causal(self):
        self.run_compiled(lambda q, k, v: attention.sdpa_math(q, k, v, is_causal=True), inputs(L=6, S=6), 1e-5)

    def test_bool_mask_with_empty_row(self):
        q, k, v = inputs()
        keep = torch.rand(2, 1, 5, 7) > 0.3
        keep[1, 0, 4] = False
        self.run_compiled(lambda q, k, v, m: attention.sdpa_math(q, k, v, attn_mask=m), (q, k, v, keep), 1e-5)

    def test_bf16(self):
        self.run_compiled(lambda q, k, v: attention.sdpa_math(q, k, v), inputs(torch.bfloat16), 2e-2)


class FusedOp(unittest.TestCase):
    """aten.scaled_dot_product_attention as one op of a toroid graph (the fused kernel on a GPU,
    the reference kernel on the CPU), run through the C ABI, against the float64 reference."""

    TYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64",
             torch.bool: "bool"}

    def run_op(self, args, options="", device="cpu"):
        from toroid import _capi, runtime
        names = ["q", "k", "v", "m"][:len(args)]
        shape = lambda t: "%s[%s]" % (self.TYPES[t.dtype], ", ".join(str(n) for n in t.shape))
        out_shape = list(args[0].shape[:-1]) + [args[2].shape[-1]]
        out_type = "%s[%s]" % (self.TYPES[args[0].dtype], ", ".join(str(n) for n in out_shape))
        call = ", ".join("%" + n for n in names) + ((", " + options) if options else "")
        text = "graph @sdpa functional {\n%s  %%o = aten.scaled_dot_product_attention.default(%s) : %s\n" \
               "  output %%o\n}\n" % ("".join("  %%%s = input : %s\n" % (n, shape(a)) for n, a in zip(names, args)),
                                        call, out_type)
        m = _capi.Module(text, device=device)
        ins = (_capi.Tensor * len(args))(*[runtime._header(a) for a in args])
        out = torch.empty(out_shape, dtype=args[0].dtype, device=device)
        outs = (_capi.Tensor * 1)(runtime._header(out))
        m.run_into(ins, outs)
        return out

    device = "cpu"

    def check(self, args, want, tol, options=""):
        got = self.run_op([a.to(self.device) for a in args], options, self.device).double().cpu()
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        err = (got - want).abs().max().item() if got.numel() else 0.0
        self.assertLess(err, tol, "max abs error %g" % err)

    def test_plain_and_lengths(self):
        q, k, v = inputs(L=9, S=13)
        self.check((q, k, v), reference(q, k, v), 1e-6)

    def test_causal_with_scale(self):
        q, k, v = inputs(L=6, S=6)
        self.check((q, k, v), reference(q, k, v, causal=True, scale=0.3), 1e-6, "None, 0.0, true, scale=0.3")

    def test_bool_mask_with_empty_row(self):
        q, k, v = inputs()
        keep = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(1)) > 0.3
        keep[1, 0, 4] = False
        self.check((q, k, v, keep), reference(q, k, v, mask=keep), 1e-6)

    def test_additive_mask_broadcast(self):
        q, k, v = inputs()
        add = torch.randn(5, 7, generator=torch.Generator().manual_seed(2))
        self.check((q, k, v, add), reference(q, k, v, mask=add), 1e-6)

    def test_grouped_query(self):
        q, k, v = inputs(H=4, KH=2)
        self.check((q, k, v), reference(q, k, v, groups=2), 1e-6, "enable_gqa=true")

    def test_bf16(self):
        q, k, v = inputs(torch.bfloat16)
        self.check((q, k, v), reference(q, k, v), 2e-2)

    def test_no_keys(self):
        q, k, v = inputs(S=0)
        self.check((q, k, v), torch.zeros(2, 4, 5, 8, dtype=torch.float64), 1e-12)


@unittest.skipUnless(torch.cuda.is_available(), "no GPU")
class FusedOpCuda(FusedOp):
    """The same cases through the CUDA device kernel (float accumulation, exp2 of log2-scaled
    scores: 1e-5 of the float64 reference for f32)."""
    device = "cuda"

    def check(self, args, want, tol, options=""):
        super().check(args, want, max(tol, 1e-5), options)


@unittest.skipUnless(hasattr(torch.nn.functional, "scaled_dot_product_attention"), "torch < 2.0: no SDPA")
class Rewrite(unittest.TestCase):
    def traced(self, L, S, **kw):
        import torch.fx
        from torch.fx.passes.shape_prop import ShapeProp

        class M(torch.nn.Module):
            def forward(self, q, k, v):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, **kw)
        gm = torch.fx.symbolic_trace(M())
        args = inputs(L=L, S=S)
        ShapeProp(gm).propagate(*args)
        return gm, args

    def test_small_rewritten_and_equal(self):
        gm, args = self.traced(6, 6, is_causal=True)
        want = torch.nn.functional.scaled_dot_product_attention(*args, is_causal=True)
        self.assertEqual(attention.decompose_attention(gm), [])
        self.assertIn(attention.sdpa_math, [n.target for n in gm.graph.nodes])
        self.assertLess((gm(*args) - want).abs().max().item(), 1e-5)

    def test_large_left_to_pytorch(self):
        gm, _ = self.traced(5, 7)
        kept = attention.decompose_attention(gm, max_score_bytes=64)
        self.assertEqual(len(kept), 1)
        self.assertIn("attention_max_score_bytes", kept[0])
        self.assertNotIn(attention.sdpa_math, [n.target for n in gm.graph.nodes])


FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)


@unittest.skipUnless(FLASH_CPU is not None, "torch without ATen's fused attention ops")
class FusedOps(unittest.TestCase):
    """ATen's fused attention ops as toroid decomposes them (fused_attention_decompositions); the
    CPU's flash op stands for the CUDA ones, which the GPU machine's model suite exercises."""

    def table(self, **kw):
        table = attention.fused_attention_decompositions(**kw)
        self.assertIn(FLASH_CPU.default, table)
        return table[FLASH_CPU.default]

    def test_equal_to_the_fused_kernel(self):
        q, k, v = inputs(L=6, S=6)
        keep = torch.rand(2, 1, 6, 6) > 0.3
        bias = torch.zeros(2, 1, 6, 6).masked_fill(~keep, float("-inf"))
        for kw in ({}, {"is_causal": True}, {"attn_mask": bias}, {"scale": 0.3}):
            with torch.no_grad():
                out, lse = self.table()(q, k, v, **kw)
                want_out, want_lse = FLASH_CPU.default(q, k, v, **kw)
            self.assertLess((out - want_out).abs().max().item(), 1e-5, kw)
            self.assertLess((lse - want_lse).abs().max().item(), 1e-5, kw)

    def test_declines(self):
        q, k, v = inputs()
        decompose = self.table()
        with torch.no_grad():
            self.assertIs(decompose(q, k, v, 0.1), NotImplemented)  # dropout
            self.assertIs(self.table(max_score_bytes=64)(q, k, v), NotImplemented)
        with torch.enable_grad():  # its backward is decomposed too
            self.assertIsNot(decompose(q, k, v), NotImplemented)

    def test_backward_equal_to_the_fused_kernel(self):
        """The backward op decomposed (attention_backward) against ATen's own, from the same
        forward result: query, key and value gradients, with masks, causal, scale, and bf16."""
        backward = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
        if backward is None:
            self.skipTest("torch without the CPU flash attention backward")
        table = attention.fused_attention_decompositions()
        keep = torch.rand(2, 1, 6, 6, generator=torch.Generator().manual_seed(1)) > 0.3
        bias = torch.zeros(2, 1, 6, 6).masked_fill(~keep, float("-inf"))
        for dtype, tolerance in ((torch.float32, 1e-5), (torch.bfloat16, 3e-2)):
            q, k, v = inputs(dtype, L=6, S=6)
            grad = torch.randn(q.shape[:-1] + (v.size(-1),), generator=torch.Generator().manual_seed(2)).to(dtype)
            for kw in ({}, {"is_causal": True}, {"attn_mask": bias.to(dtype)}, {"scale": 0.3}):
                with torch.no_grad():
                    out, lse = FLASH_CPU.default(q, k, v, **kw)
                    causal = kw.get("is_causal", False)
                    rest = {key: value for key, value in kw.items() if key != "is_causal"}
                    want = backward.default(grad, q, k, v, out, lse, 0.0, causal, **rest)
                    got = table[backward.default](grad, q, k, v, out, lse, 0.0, causal, **rest)
                for name, w, g in zip(("query", "key", "value"), want, got):
                    err = (w.float() - g.float()).abs().max().item()
                    self.assertLess(err, tolerance, (dtype, kw, name))

    def test_efficient_backward_gives_the_bias_gradient(self):
        """The efficient op's backward decomposed, against autograd through sdpa_math: query, key,
        value and an additive bias broadcast over the heads (its gradient summed back to its
        shape), in f64."""
        backward = getattr(torch.ops.aten, "_scaled_dot_product_efficient_attention_backward", None)
        if backward is None:
            self.skipTest("torch without the efficient attention backward")
        q, k, v = inputs(torch.float64, L=6, S=6)
        bias = torch.randn(2, 1, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
        leaves = [t.clone().requires_grad_() for t in (q, k, v, bias)]
        out = attention.sdpa_math(*leaves[:3], leaves[3])
        grad = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
        out.backward(grad)
        table = attention.fused_attention_decompositions()
        got = table[backward.default](grad, q, k, v, bias, out.detach(), None, None, None, 0.0,
                                      [True, True, True, True])
        for name, leaf, g in zip(("query", "key", "value", "bias"), leaves, got):
            self.assertEqual(g.shape, leaf.shape, name)
            self.assertLess((leaf.grad - g).abs().max().item(), 1e-10, name)

    def test_multi_head_attention_compiles_without_fallbacks(self):
        """nn.MultiheadAttention's inference fast path through torch.compile(backend="toroid"):
        every op compiled, the result eager's."""
        import toroid.backend
        mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
        x = torch.randn(2, 10, 32)
        with torch.no_grad():
            want = mha(x, x, x, need_weights=False)[0]
        seen = []
        listener = lambda name, compiled, backward: seen.append(compiled)  # noqa: E731
        toroid.backend.listeners.append(listener)
        try:
            torch._dynamo.reset()
            compiled = torch.compile(mha, backend="toroid")
            with torch.no_grad():
                got = compiled(x, x, x, need_weights=False)[0]
        finally:
            toroid.backend.listeners.remove(listener)
        self.assertTrue(seen)
        self.assertEqual([f for c in seen for f in c.fallbacks], [])
        self.assertLess((got - want).abs().max().item(), 1e-5)


class SelfAttention(torch.nn.Module):
    """A transformer's attention block as Hugging Face models write it: projections viewed as
    heads and transposed, scaled_dot_product_attention, heads transposed back and merged."""

    def __init__(self, dim=64, heads=4, causal=False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = (t.view(B, L, self.heads, D // self.heads).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal)
        return self.out(o.transpose(1, 2).reshape(B, L, D))


@unittest.skipUnless(hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"),
                     "torch without ATen's fused attention ops")
class FusedRouting(unittest.TestCase):
    """ATen's fused attention ops (what AOTAutograd leaves of an attention over
    attention_max_score_bytes) become toroid's fused op: no fallback, eager's result."""
    device = "cpu"
    dtypes = (torch.float32, torch.bfloat16)

    def compiled_run(self, model, *args):
        import toroid.backend
        from toroid import config
        seen = []
        listener = lambda name, compiled, backward: seen.append(compiled)  # noqa: E731
        toroid.backend.listeners.append(listener)
        limit, config.attention_max_score_bytes = config.attention_max_score_bytes, 0
        try:
            torch._dynamo.reset()
            with torch.no_grad():
                got = torch.compile(model, backend="toroid")(*args)
        finally:
            config.attention_max_score_bytes = limit
            toroid.backend.listeners.remove(listener)
        self.assertTrue(seen)
        self.assertEqual([f for c in seen for f in c.fallbacks], [], "ops left to eager")
        targets = [n.target for c in seen for n in c.gm.graph.nodes]
        self.assertIn(torch.ops.aten.scaled_dot_product_attention.default, targets)
        return got

    def check(self, causal=False, masked=False):
        for dtype in self.dtypes:
            with self.subTest(dtype=dtype):
                torch.manual_seed(0)
                model = SelfAttention(causal=causal).to(self.device, dtype).eval()
                x = torch.randn(2, 40, 64, device=self.device, dtype=dtype)
                args = [x]
                if masked:
                    args.append(torch.rand(2, 1, 40, 40, device=self.device) > 0.3)
                with torch.no_grad():
                    want = model(*args)
                got = self.compiled_run(model, *args)
                tol = 1e-4 if dtype == torch.float32 else 3e-2
                self.assertLess((got.float() - want.float()).abs().max().item(), tol)

    def test_plain(self):
        self.check()

    def test_causal(self):
        self.check(causal=True)

    def test_bool_mask(self):
        self.check(masked=True)


@unittest.skipUnless(torch.cuda.is_available() and hasattr(torch.ops.aten, "_scaled_dot_product_efficient_attention"),
                     "no CUDA device")
class FusedRoutingCuda(FusedRouting):
    device = "cuda"
    dtypes = (torch.float32, torch.bfloat16, torch.float16)


@unittest.skipUnless(torch.cuda.is_available() and hasattr(torch, "export"), "no CUDA device or no torch.export")
class AotPackage(unittest.TestCase):
    """An exported attention block (ATen's fused attention op after run_decompositions) packages
    with toroid's fused op in its graph."""

    def test_packaged_with_the_fused_op(self):
        import tempfile
        import toroid.aot
        torch.manual_seed(0)
        model = SelfAttention(causal=True).to("cuda", torch.bfloat16).eval()
        x = torch.randn(2, 40, 64, device="cuda", dtype=torch.bfloat16)
        ep = torch.export.export(model, (x,))
        with tempfile.TemporaryDirectory() as d:
            text = toroid.aot.package(ep, os.path.join(d, "attention.toroid"), device="cuda")
        self.assertIn("aten.scaled_dot_product_attention.default", text)
        self.assertNotIn("_scaled_dot_product", text)


if __name__ == "__main__":
    unittest.main()
