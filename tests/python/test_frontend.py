"""The PyTorch frontend on the CPU (python/toroid): FX graphs from make_fx and functorch's
aot_function converted to .tir, compiled through libtoroid.so (ctypes), run, and compared with
eager PyTorch. Runs with torch 1.13 (Debian's python3-torch) and newer; exits 77 (skip) without
torch. TOROID_LIBRARY names the library under test.
"""
import logging
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
import toroid  # noqa: E402
from toroid import _capi  # noqa: E402
from toroid.fx_to_tir import graph_to_tir  # noqa: E402
from toroid.runtime import boxed, compile_graph  # noqa: E402

F = torch.nn.functional


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def close(test, got, want, tol=1e-4):
    if isinstance(want, (tuple, list)):
        test.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            close(test, g, w, tol)
        return
    test.assertEqual(got.shape, want.shape)
    test.assertEqual(got.dtype, want.dtype)
    test.assertTrue(torch.allclose(got, want, atol=tol, rtol=tol),
                    "max difference %g" % (got - want).abs().max().item())


class Frontend(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def test_mlp(self):
        m = MLP().eval()
        x = torch.randn(8, 32)
        gm = make_fx(m)(x)
        c = compile_graph(gm, [x])
        self.assertEqual(c.fallbacks, [])
        self.assertEqual([k for k, _ in c.steps], ["toroid"])
        with torch.no_grad():
            close(self, c(x), m(x))
            y = torch.randn(8, 32)
            close(self, c(y), m(y))

    def test_softmax_layer_norm_symbolic(self):
        w, b = torch.randn(48), torch.randn(48)

        def f(x, w, b):
            return torch.softmax(F.layer_norm(x, (48,), w, b), -1) * 2.0

        x = torch.randn(6, 48)
        gm = make_fx(f, tracing_mode="symbolic")(x, w, b)
        text = graph_to_tir(gm)
        self.assertIn("sym s0 : hint=6", text)
        c = compile_graph(gm)
        self.assertEqual(c.fallbacks, [])
        for rows in (6, 11, 3):  # new sizes run on the same symbolic compile
            x = torch.randn(rows, 48)
            close(self, c(x, w, b), f(x, w, b))
        part = c.steps[0][1]
        self.assertEqual(part.module.num_specializations, 1)

    def test_symbolic_sizes_in_arguments(self):
        def f(x):
            return (x.view(x.shape[0] * x.shape[1]) * 2).sum() + x.shape[0]

        gm = make_fx(f, tracing_mode="symbolic")(torch.randn(3, 4))
        c = compile_graph(gm)
        self.assertEqual(c.fallbacks, [])  # sym_size and SymInt arithmetic are not fallbacks
        parts = [s for kind, s in c.steps if kind == "toroid"]
        self.assertIn("aten.view.default(%x_1, [s0*s1])", parts[-1].text.replace("(s0*s1)", "s0*s1"))
        for shape in ((3, 4), (5, 7)):
            x = torch.randn(*shape)
            close(self, c(x), f(x))

    def test_symbol_used_only_in_arguments(self):
        # The first partition makes a tensor of size 2*s0 and has no tensor input to bind s0
        # from: the sym_size node's value is passed in as a scalar input.
        def f(x):
            b = torch.ones(x.shape[0] * 2).sum()
            return torch.lgamma(x) + b  # lgamma: eager, between the two partitions

        gm = make_fx(f, tracing_mode="symbolic")(torch.randn(4, 3))
        c = compile_graph(gm)
        first = next(s for k, s in c.steps if k == "toroid")
        self.assertIn("= input : int{value=s0}", first.text)
        for n in (4, 7):
            x = torch.rand(n, 3) + 0.5
            close(self, c(x), f(x))

    def test_static_mode_compiles_per_size(self):
        def f(x):
            return torch.softmax(x, -1)

        gm = make_fx(f, tracing_mode="symbolic")(torch.randn(4, 8))
        c = compile_graph(gm, dynamic=False)
        for shape in ((4, 8), (6, 8), (4, 8), (7, 8)):
            x = torch.randn(*shape)
            close(self, c(x), f(x))
        self.assertEqual(c.steps[0][1].module.num_specializations, 3)

    def test_graph_guard_failure_is_an_error(self):
        def f(x):
            return x * 2 if x.shape[0] > 4 else x * 3

        gm = make_fx(f, tracing_mode="symbolic")(torch.randn(6, 3))
        self.assertIn("guard", graph_to_tir(gm))
        c = compile_graph(gm)
        close(self, c(torch.ones(8, 3)), torch.full((8, 3), 2.0))
        # torch 2 records the guard as the symbol's range: s0 = 2 is outside [5, inf].
        with self.assertRaisesRegex(toroid.ToroidError, "guard|outside its range"):
            c(torch.ones(2, 3))  # traced for > 4 rows: an error, never the wrong branch

    def test_conv_net(self):
        m = ConvNet().eval()
        x = torch.randn(2, 3, 16, 16)
        gm = make_fx(m)(x)
        c = compile_graph(gm, [x])
        # The convolutions run through oneDNN, max pooling as generated code: nothing in eager.
        self.assertEqual([op for _, op, _ in c.fallbacks], [])
        with torch.no_grad():
            close(self, c(x), m(x), 1e-3)

    def test_fallback_is_logged_and_correct(self):
        def f(x):
            y = torch.relu(x) + 1
            z = torch.logcumsumexp(y, 1)  # no kernel in toroid: runs in eager
            return torch.tanh(z) * 3

        x = torch.randn(4, 8)
        gm = make_fx(f)(x)
        with self.assertLogs("toroid", level="WARNING") as logs:
            c = compile_graph(gm, [x])
        self.assertTrue(any("aten.logcumsumexp.default" in m for m in logs.output), logs.output)
        self.assertEqual([op for _, op, _ in c.fallbacks], ["aten.logcumsumexp.default"])
        self.assertEqual([k for k, _ in c.steps], ["toroid", "eager", "toroid"])
        close(self, c(x), f(x))

    def test_foreach_ops_expand_per_element(self):
        # An Adam-like foreach update: every _foreach_* op becomes one op per tensor, so the
        # whole update compiles (nothing falls back) and matches eager.
        def step(ps, gs, ms, vs):
            ms = torch._foreach_add(torch._foreach_mul(ms, 0.9), gs, alpha=0.1)
            vs = torch._foreach_addcmul(torch._foreach_mul(vs, 0.999), gs, gs, value=0.001)
            den = torch._foreach_add(torch._foreach_sqrt(vs), 1e-8)
            upd = torch._foreach_div(ms, den)
            ps = torch._foreach_sub(ps, torch._foreach_mul(upd, 0.01))
            ps = torch._foreach_addcdiv(ps, ms, den, value=-0.5)
            return list(ps) + list(torch._foreach_maximum(ms, vs)) + list(torch._foreach_reciprocal(den))

        shapes = [(4, 8), (16,), (3, 5)]
        args = [[torch.randn(*s) for s in shapes] for _ in range(3)] + [[torch.rand(*s) for s in shapes]]
        gm = make_fx(step)(*args)
        self.assertTrue(any("_foreach_" in str(n.target) for n in gm.graph.nodes))
        c = compile_graph(gm, [t for a in args for t in a])
        self.assertEqual(c.fallbacks, [])
        self.assertFalse(any("_foreach_" in str(n.target) for n in gm.graph.nodes))
        close(self, c(*[t for a in args for t in a]), step(*args), tol=1e-5)

    def test_aot_function_forward_backward(self):
        from functorch.compile import aot_function
        compiled = []

        def compiler(gm, example_inputs):
            c = compile_graph(gm, example_inputs, name="aot%d" % len(compiled))
            compiled.append(c)
            return boxed(c)

        def loss(x, w1, b1, w2, b2):
            h = torch.relu(F.linear(x, w1, b1))
            return F.linear(h, w2, b2).pow(2).mean()

        params = [torch.randn(64, 32) * 0.1, torch.randn(64), torch.randn(10, 64) * 0.1, torch.randn(10)]
        x = torch.randn(16, 32)
        ps = [p.clone().requires_grad_() for p in params]
        qs = [p.clone().requires_grad_() for p in params]
        fn = aot_function(loss, fw_compiler=compiler, bw_compiler=compiler)
        out = fn(x, *ps)
        out.backward()
        ref = loss(x, *qs)
        ref.backward()
        self.assertEqual(len(compiled), 2)  # forward and backward
        close(self, out.detach(), ref.detach())
        for p, q in zip(ps, qs):
            close(self, p.grad, q.grad)

    def test_transformer_encoder_layer(self):
        # train() with no dropout: the composite path (eval() takes a fused op toroid lacks).
        # torch 2's attention is a fused op below make_fx: traced with the decompositions the
        # backend gives AOTAutograd (none apply on torch 1.13).
        from toroid.attention import fused_attention_decompositions
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True, activation="gelu").train()
        x = torch.randn(2, 10, 64)
        gm = make_fx(lambda x: layer(x), decomposition_table=fused_attention_decompositions())(x)
        c = compile_graph(gm, [x])
        self.assertEqual(c.fallbacks, [])  # _unsafe_view is written as the view it is
        with torch.no_grad():
            close(self, c(x), layer(x))

    def test_aot_training_with_backward_fallbacks(self):
        from functorch.compile import aot_module
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                  torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 5))
        compiled = []

        def compiler(gm, example_inputs):
            compiled.append(compile_graph(gm, example_inputs))
            return boxed(compiled[-1])

        x = torch.randn(4, 3, 8, 8)
        out = aot_module(net, fw_compiler=compiler, bw_compiler=compiler)(x)
        out.sum().backward()
        grads = [p.grad.clone() for p in net.parameters()]
        net.zero_grad()
        ref = net(x)
        ref.sum().backward()
        close(self, out.detach(), ref.detach())
        close(self, grads, [p.grad for p in net.parameters()])
        backward_fallbacks = [op for _, op, _ in compiled[1].fallbacks]
        self.assertIn("aten.native_batch_norm_backward.default", backward_fallbacks)

    def test_convolution_backward_compiles(self):
        # Both gradients of each convolution are library calls and the bias gradient a reduction:
        # the backward graph runs nothing in eager. The first convolution's input needs no
        # gradient (output_mask [False, True, True]); the second is strided and grouped.
        from functorch.compile import aot_module
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Tanh(),
                                  torch.nn.Conv2d(8, 6, 3, stride=2, padding=1, groups=2, bias=False),
                                  torch.nn.Flatten(), torch.nn.Linear(6 * 5 * 5, 4))
        compiled, targets = [], []

        def compiler(gm, example_inputs):
            targets.append([str(n.target) for n in gm.graph.nodes])
            compiled.append(compile_graph(gm, example_inputs))
            return boxed(compiled[-1])

        x = torch.randn(2, 3, 10, 10)
        out = aot_module(net, fw_compiler=compiler, bw_compiler=compiler)(x)
        out.square().sum().backward()
        grads = [p.grad.clone() for p in net.parameters()]
        net.zero_grad()
        ref = net(x)
        ref.square().sum().backward()
        close(self, out.detach(), ref.detach())
        close(self, grads, [p.grad for p in net.parameters()], 1e-4)
        self.assertEqual(sum("convolution_backward" in t for t in targets[1]), 2)
        self.assertEqual([op for c in compiled for _, op, _ in c.fallbacks], [])

    @unittest.skipUnless(hasattr(torch, "compile"), "torch < 2.0: no dynamo")
    def test_batch_norm_training_step_compiles(self):
        # torch.compile's training graph holds _native_batch_norm_legit_functional, which the core
        # decompositions leave whole: the backend decomposes it (statistics and running-stat
        # updates compiled), and the running stats move as eager's.
        import copy
        import toroid.backend
        net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        ref = copy.deepcopy(net)
        seen = []
        listener = lambda name, compiled, backward: seen.append(compiled)  # noqa: E731
        toroid.backend.listeners.append(listener)
        try:
            torch._dynamo.reset()
            x = torch.randn(16, 6)
            out = torch.compile(net, backend="toroid")(x)
            out.square().sum().backward()
        finally:
            toroid.backend.listeners.remove(listener)
        want = ref(x)
        want.square().sum().backward()
        close(self, out.detach(), want.detach())
        close(self, [p.grad for p in net.parameters()], [p.grad for p in ref.parameters()])
        close(self, [net[1].running_mean, net[1].running_var], [ref[1].running_mean, ref[1].running_var])
        ops = [op for c in seen for _, op, _ in c.fallbacks]
        self.assertFalse([op for op in ops if "batch_norm" in op], ops)

    @unittest.skipUnless(hasattr(torch, "compile"), "torch < 2.0: no dynamo")
    def test_vector_norm_compiles(self):
        # linalg_vector_norm (weight norm, as wav2vec2's positional convolution uses) reaches the
        # backend undecomposed: decomposed there into reductions toroid compiles.
        import toroid.backend
        seen = []
        listener = lambda name, compiled, backward: seen.append(compiled)  # noqa: E731
        toroid.backend.listeners.append(listener)
        fn = lambda v, g: g * v / torch.linalg.vector_norm(v, dim=(1, 2), keepdim=True)  # noqa: E731
        v, g = torch.randn(8, 3, 5), torch.rand(8, 1, 1)
        try:
            torch._dynamo.reset()
            got = torch.compile(fn, backend="toroid")(v, g)
        finally:
            toroid.backend.listeners.remove(listener)
        close(self, got, fn(v, g))
        ops = [op for c in seen for _, op, _ in c.fallbacks]
        self.assertEqual(ops, [])

    def test_backend_compiler_under_aot_function(self):
        # The compiler toroid_backend hands aot_autograd, driven here by functorch (torch 1.13
        # has no dynamo): boxed calls, forward and backward.
        from functorch.compile import aot_function
        from toroid.backend import _compiler

        def f(x, w):
            return torch.tanh(x @ w).sum(1)

        x, w = torch.randn(5, 4), torch.randn(4, 3, requires_grad=True)
        w2 = w.detach().clone().requires_grad_()
        out = aot_function(f, fw_compiler=_compiler(), bw_compiler=_compiler())(x, w)
        out.sum().backward()
        ref = f(x, w2)
        ref.sum().backward()
        close(self, out.detach(), ref.detach())
        close(self, w.grad, w2.grad)

    def test_embedding_cross_entropy_training(self):
        # int64 inputs, gather and its backward (a scatter-add), a loss.
        from functorch.compile import aot_function

        def f(ids, target, emb):
            return F.cross_entropy(F.embedding(ids, emb).mean(1), target)

        ids, target = torch.randint(0, 50, (8, 5)), torch.randint(0, 16, (8,))
        emb = torch.randn(50, 16, requires_grad=True)
        emb2 = emb.detach().clone().requires_grad_()
        compiler = lambda gm, ex: boxed(compile_graph(gm, ex))  # noqa: E731
        out = aot_function(f, fw_compiler=compiler, bw_compiler=compiler)(ids, target, emb)
        out.backward()
        ref = f(ids, target, emb2)
        ref.backward()
        close(self, out.detach(), ref.detach())
        close(self, emb.grad, emb2.grad)

    def test_non_contiguous_input_at_run_time(self):
        gm = make_fx(lambda x: x * 2 + 1)(torch.randn(4, 6))
        c = compile_graph(gm, [torch.randn(4, 6)])
        x = torch.randn(6, 4).t()  # traced contiguous: laid out again before the call
        close(self, c(x), x * 2 + 1)

    def test_in_place_ops_fall_back_and_mutate_the_input(self):
        def f(x, y):
            x.add_(1)  # mutates the caller's tensor
            return (x * y).relu_()

        x, y = torch.randn(4, 5), torch.randn(4, 5)
        c = compile_graph(make_fx(f)(x.clone(), y), [x.clone(), y])
        self.assertEqual(sorted(op for _, op, _ in c.fallbacks), ["aten.add_.Tensor", "aten.relu_.default"])
        a, b = x.clone(), x.clone()
        close(self, c(a, y), f(b, y))
        close(self, a, b)

    def test_outputs_alias_inputs(self):
        def f(x):
            return x.t(), x * 2

        x = torch.randn(4, 6)
        gm = make_fx(f)(x)
        c = compile_graph(gm, [x])
        t, y = c(x)
        self.assertEqual(t.data_ptr(), x.data_ptr())  # a view, not a copy
        self.assertEqual(t.stride(), (1, 6))
        close(self, (t, y), f(x))

    def test_split_views_at_offsets(self):
        def f(x):
            a, b = torch.split(x, [2, 6], 1)
            return a.exp(), b.t()

        x = torch.randn(3, 8)
        c = compile_graph(make_fx(f)(x), [x])
        e, t = c(x)
        self.assertEqual(t.data_ptr(), x.data_ptr() + 2 * x.element_size())  # a view of x at offset 2
        close(self, (e, t), f(x))

    def test_tir_text(self):
        def f(x, w):
            return torch.mm(x, w.t()).sum(1, keepdim=True)

        inputs = [torch.randn(3, 5), torch.randn(4, 5)]
        gm = make_fx(f)(*inputs)
        text = graph_to_tir(gm, inputs, name="g")
        self.assertIn("graph @g functional {", text)
        self.assertIn("input : f32[3, 5]", text)
        self.assertIn("aten.t.default(%w_1) : f32[5, 4]{strides=[1, 5], storage=%w_1}", text)
        self.assertIn("aten.sum.dim_IntList(%mm, [1], true) : f32[3, 1]", text)

    def test_capi_module_directly(self):
        m = _capi.Module("graph @g functional {\n  %x = input : f32[2, 3]\n  %y = aten.neg.default(%x) : f32[2, 3]\n"
                         "  output %y\n}\n")
        self.assertEqual((m.num_inputs, m.num_outputs), (1, 1))
        self.assertTrue(toroid.op_supported("aten.neg.default"))
        self.assertFalse(toroid.op_supported("aten.logcumsumexp.default"))

    def test_errors(self):
        with self.assertRaisesRegex(toroid.ToroidError, r"bad\.tir:1:\d+: error"):
            _capi.Module("graph @g {", filename="bad.tir")
        with self.assertRaisesRegex(toroid.ToroidError, 'device must be "cpu" or "cuda"'):
            _capi.Module("graph @g functional {\n  output\n}\n", device="tpu")
        gm = make_fx(lambda x: x + 1)(torch.randn(2, 3))
        c = compile_graph(gm, [torch.randn(2, 3)])
        with self.assertRaisesRegex(TypeError, "takes 1 inputs, got 2"):
            c(torch.randn(2, 3), torch.randn(2, 3))
        with self.assertRaisesRegex(toroid.ToroidError, "%arg0_1|%x"):
            c(torch.randn(5, 3))  # a static graph: another size is an error, not a wrong answer

    def test_dump_dir(self):
        import tempfile
        gm = make_fx(lambda x: torch.softmax(x, -1))(torch.randn(2, 3))
        with tempfile.TemporaryDirectory() as d:
            compile_graph(gm, [torch.randn(2, 3)], dump_dir=d, name="dumped")
            # Another graph of the same name: a directory of its own (the old layout overwrote).
            other = make_fx(lambda x: torch.softmax(x, 0))(torch.randn(2, 3))
            compile_graph(other, [torch.randn(2, 3)], dump_dir=d, name="dumped")
            self.assertEqual(sorted(os.listdir(d)), ["dumped_p0.0", "dumped_p0.1"])
            self.assertEqual(sorted(os.listdir(os.path.join(d, "dumped_p0.0"))),
                             ["compile.json", "graph.tir", "kernels.cpp", "loop.txt", "memory.json", "passes",
                              "provenance.json", "report.html", "wrapper.txt"])

    def test_config_debug_writes_a_directory_per_compile(self):
        import tempfile
        gm = make_fx(lambda x: torch.relu(x) * 3)(torch.randn(4, 5))
        with tempfile.TemporaryDirectory() as d:
            toroid.config.debug, toroid.config.debug_dir = True, d
            try:
                compile_graph(gm, [torch.randn(4, 5)], name="cfg")
            finally:
                toroid.config.debug, toroid.config.debug_dir = False, None
            self.assertEqual(os.listdir(d), ["cfg_p0.0"])
            with open(os.path.join(d, "cfg_p0.0", "report.html")) as f:
                self.assertIn('<svg id="graph"', f.read())
        toroid.config.debug = "yes"
        try:
            with self.assertRaisesRegex(TypeError, "toroid.config.debug must be True or False"):
                compile_graph(gm, [torch.randn(4, 5)], name="cfg2")
        finally:
            toroid.config.debug = False

    def test_explain_tells_what_ran_each_op(self):
        import io
        def f(x, w):
            return torch.softmax(torch.relu(x @ w) + 1, -1).cumsum(-1)
        out = io.StringIO()
        e = toroid.explain(f, torch.randn(8, 16), torch.randn(16, 32), file=out)
        runs = {r["op"].split("::")[-1].split(".")[0].replace("aten.", ""): r for r in e.rows}
        self.assertEqual(runs["mm"]["runs"], "library")
        self.assertEqual(runs["relu"]["runs"], "kernel")
        self.assertIn("fused with", runs["relu"]["detail"])  # relu, add and the softmax: one kernel
        self.assertIn("decomposed into", runs["_softmax"]["detail"])
        self.assertEqual(runs["cumsum"]["runs"], "reference kernel")
        self.assertIn("why: ", runs["cumsum"]["detail"])
        self.assertIn("toroid.explain: 1 graph(s) compiled", out.getvalue())
        self.assertIn("relu", out.getvalue())

    def test_provenance_names_fx_nodes_and_user_stack_lines(self):
        import json
        import tempfile
        gm = make_fx(lambda x: torch.softmax(x, -1) * 2)(torch.randn(2, 3))
        calls = [n for n in gm.graph.nodes if n.op == "call_function"]
        # What torch.compile records on each node (make_fx alone records none).
        for i, n in enumerate(calls):
            n.meta["stack_trace"] = ('  File "/usr/lib/torch/nn/module.py", line 1, in _call_impl\n    return f(x)\n'
                                     '  File "/home/u/model.py", line %d, in forward\n    y = step_%d(x)\n' % (10 + i, i))
        with tempfile.TemporaryDirectory() as d:
            compile_graph(gm, [torch.randn(2, 3)], dump_dir=d, name="prov")
            with open(os.path.join(d, "prov_p0.0", "provenance.json")) as f:
                prov = json.load(f)
        by_origin = {}
        for n in prov["nodes"]:
            by_origin.setdefault(n.get("origin"), []).append(n)
        kernel_lines = {c["line"] for c in prov["calls"] if c["kind"] == "kernel"}
        for i, n in enumerate(calls):
            mine = by_origin.get(n.name)
            self.assertTrue(mine, "no node of the compiled graph comes from %s: %s" % (n.name, prov))
            for m in mine:  # softmax decomposes into several nodes: each names the softmax
                self.assertEqual(m["stack"], "model.py:%d in forward: y = step_%d(x)" % (10 + i, i))
                self.assertEqual(m["runs_as"], "kernel")
                self.assertTrue(set(m["lines"]) <= kernel_lines)

    def test_missing_library_is_a_clear_error(self):
        import subprocess
        code = ("import sys, torch; sys.path.insert(0, %r); import toroid\n"
                "from torch.fx.experimental.proxy_tensor import make_fx\n"
                "try:\n    toroid.compile_graph(make_fx(lambda x: x + 1)(torch.ones(2)), [torch.ones(2)])\n"
                "except toroid.ToroidError as e:\n    print('ERR', e)\n" % os.path.dirname(toroid.__path__[0]))
        env = dict(os.environ, TOROID_LIBRARY="/nonexistent/libtoroid.so")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertIn("ERR libtoroid.so not found; set TOROID_LIBRARY", out.stdout, out.stderr)

    def test_export_needs_new_torch(self):
        import toroid.export
        if hasattr(torch, "export"):
            self.skipTest("this torch has torch.export")
        with self.assertRaisesRegex(toroid.ToroidError, "needs torch >= 2.1"):
            toroid.export.load("model.pt2")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    unittest.main(verbosity=2)
