"""Calling compiled graphs as a user would: empty tensors in every op family, calls checked
against the compiled graph (dtype, device, rank), many threads on one callable, reference-kernel
ops run in eager (logged), integer division by zero, the dynamo backend's options. Runs with
torch 1.13 (Debian's python3-torch) and newer on the CPU; exits 77 (skip) without torch.
"""
import contextlib
import logging
import os
import sys
import threading
import unittest

try:
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
except ImportError:
    print("torch is not installed: skipping")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import toroid  # noqa: E402
from toroid.backend import _check_options  # noqa: E402
from toroid.runtime import boxed, compile_graph  # noqa: E402


@contextlib.contextmanager
def env(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old

F = torch.nn.functional

# One case per op family (as toroid's meta and lowering files group them), each on inputs with
# zero elements: (name, function, inputs).
E = torch.randn(0, 5)  # no rows
W = torch.randn(4, 0)  # no columns
EMPTY_CASES = [
    ("unary", lambda x: torch.sin(x).exp().sqrt(), [E]),
    ("unary_int", lambda x: torch.abs(x).neg(), [torch.zeros(0, 3, dtype=torch.int64)]),
    ("binary_broadcast", lambda x, y: x * y + 1, [E, torch.randn(5)]),
    ("compare_where", lambda x: torch.where(x > 0, x, -x), [E]),
    ("cast", lambda x: x.to(torch.float64) * 2, [E]),
    ("bf16", lambda x: (x.to(torch.bfloat16) * 3).float(), [W]),
    ("sum_rows", lambda x: x.sum(-1), [E]),
    ("sum_empty_dim", lambda x: x.sum(-1), [W]),  # sums over nothing: zeros
    ("mean_all", lambda x: x.amax(0), [W]),
    ("softmax", lambda x: torch.softmax(x, -1), [E]),
    ("layer_norm", lambda x: F.layer_norm(x, [5]), [E]),
    ("views", lambda x: x.t().reshape(-1, 1).expand(-1, 3), [E]),
    ("slice_to_empty", lambda x: x[:, 2:2] + 1, [torch.randn(3, 5)]),
    ("cat", lambda x, y: torch.cat([x, y], 0), [E, torch.randn(2, 5)]),
    ("index_select", lambda x, i: torch.index_select(x, 0, i), [torch.randn(4, 5), torch.zeros(0, dtype=torch.int64)]),
    ("gather_empty_source_rows", lambda x, i: torch.gather(x, 1, i), [E, torch.zeros(0, 2, dtype=torch.int64)]),
    ("embedding", lambda w, i: F.embedding(i, w), [torch.randn(6, 3), torch.zeros(0, 2, dtype=torch.int64)]),
    ("mm_empty_m", lambda a, b: a @ b, [E, torch.randn(5, 3)]),
    ("mm_empty_k", lambda a, b: a @ b, [W, torch.randn(0, 3)]),  # a product over nothing: zeros
    ("linear", lambda x, w, b: F.linear(x, w, b), [E, torch.randn(3, 5), torch.randn(3)]),
    ("conv2d_batch0", lambda x, w: F.conv2d(x, w, padding=1), [torch.randn(0, 2, 5, 5), torch.randn(3, 2, 3, 3)]),
    ("pad", lambda x: F.pad(x, [1, 2]), [E]),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 2), [torch.randn(0, 3, 4)]),
    ("arange0", lambda x: torch.arange(0, dtype=torch.float32) + x.sum(), [torch.randn(3)]),
    ("zeros0", lambda x: torch.zeros(0, 3) + x, [torch.randn(3)]),
    ("full_like", lambda x: torch.full_like(x, 2.0) + x, [E]),
]


def close(test, got, want, tol=1e-4, what=""):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            close(test, g, w, tol, what)
        return
    test.assertEqual(tuple(got.shape), tuple(want.shape), what)
    test.assertEqual(got.dtype, want.dtype, what)
    test.assertTrue(torch.allclose(got.double(), want.double(), atol=tol, rtol=tol, equal_nan=True), what)


class EmptyTensors(unittest.TestCase):
    def test_every_family_on_zero_elements(self):
        failures = []
        for name, fn, inputs in EMPTY_CASES:
            try:
                c = compile_graph(make_fx(fn)(*inputs), inputs, name="empty_" + name)
                got, want = c(*inputs), fn(*inputs)
                close(self, got, want, what=name)
                # toroid compiled it: at least one partition ran
                self.assertIn("toroid", [k for k, _ in c.steps], name)
            except Exception as e:  # collect all, report together
                failures.append("%s: %s: %s" % (name, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        self.assertEqual(failures, [])


@contextlib.contextmanager
def counted_holders():
    """Donation's holder counts for the test's duration. torch 1.13 cannot count a tensor's C++
    holders: there, the Python count stands in for all three (the flow is the same). Yields
    whether this torch counts them itself."""
    from toroid import runtime
    saved = (runtime._can_check_exclusive, runtime._holders, runtime._exclusive_base, runtime._exclusive_view)
    counts = runtime._can_check_exclusive()
    if not counts:
        runtime._can_check_exclusive = lambda: True
        runtime._holders = lambda x: (sys.getrefcount(x), 1, 1)
        runtime._exclusive_base = runtime._exclusive_view = None
    try:
        yield counts
    finally:
        runtime._can_check_exclusive, runtime._holders, runtime._exclusive_base, runtime._exclusive_view = saved


class CheckedCalls(unittest.TestCase):
    def test_dtype_switch_is_an_error_not_a_misread(self):
        c = compile_graph(make_fx(lambda x: x * 2 + 1)(torch.ones(4)), [torch.ones(4)])
        x = torch.tensor([1.0, 2.0, 3.0, 4.0])
        close(self, c(x), x * 2 + 1)
        with self.assertRaisesRegex(toroid.ToroidError, "dtype is f64 but the graph expects f32"):
            c(x.double())  # same shape and strides: the call plan must not be reused
        close(self, c(x), x * 2 + 1)

    def test_repeated_calls_take_the_lean_run_with_fresh_outputs(self):
        # A signature seen again runs Partition._lean's function: each call's outputs are new
        # tensors (a caller keeps the last call's), in the traced layout, with the right values.
        fn = lambda x, y: (x - x.amax(-1, keepdim=True), (x * y).t().contiguous())  # noqa: E731
        x, y = torch.randn(6, 4), torch.randn(6, 4)
        c = boxed(compile_graph(make_fx(fn)(x, y), [x, y]))
        kept = []
        for k in range(4):
            xs, ys = x + k, y - k
            got = c([xs, ys])
            kept.append(got)
            for g, w in zip(got, fn(xs, ys)):
                close(self, g, w)
                self.assertEqual(g.stride(), w.stride())
        part = c.compiled.steps[0][1]
        self.assertTrue(any(f is not None for f in part._leans.values()))
        self.assertEqual(len({t.data_ptr() for out in kept for t in out}), 8)  # no output memory shared
        close(self, kept[0][0], fn(x, y)[0])  # the first call's result, unchanged by later calls

    def test_repeated_boxed_calls_go_direct_behind_the_guard(self):
        # A one-partition CPU graph's repeated signature runs straight from the boxed call
        # (CompiledGraph._direct_call): same values, fresh outputs, the argument list emptied;
        # another signature, and grad mode on, still go right.
        fn = lambda x, y: (x * y + 1,)  # noqa: E731
        x, y = torch.randn(8, 16), torch.randn(8, 16)
        c = boxed(compile_graph(make_fx(fn)(x, y), [x, y]))
        for _ in range(3):
            close(self, c([x, y])[0], fn(x, y)[0])
        part = c.compiled.steps[0][1]
        if part._guard is None:
            self.skipTest("this torch has no C++ tensor guard (torch._C._dynamo.guards)")
        self.assertTrue(callable(c.compiled._direct))
        args = [x, y]
        first = c.compiled._direct(args)
        self.assertEqual(args, [], "a direct call empties its argument list")
        second = c([x, y])[0]
        close(self, first[0], fn(x, y)[0])
        self.assertNotEqual(first[0].data_ptr(), second.data_ptr())
        strided = torch.randn(16, 8).t(), y  # other strides, another signature: through call_list
        self.assertIsNone(c.compiled._direct(list(strided)))
        close(self, c(list(strided))[0], fn(*strided)[0])
        with torch.enable_grad():
            got = c([x, y])[0]
            self.assertTrue(torch.is_grad_enabled())
        close(self, got, fn(x, y)[0])

    def test_lean_run_in_c_and_through_ctypes_agree(self):
        # The builtin lean run (one C call) against the ctypes call it replaces
        # (TOROID_PYTHON_CALL=0), over more inputs than the C call keeps on its stack.
        from toroid import _capi
        fn = lambda *xs: (sum(x * (i + 1) for i, x in enumerate(xs)), xs[0] - xs[-1])  # noqa: E731
        xs = [torch.randn(3, 5) for _ in range(70)]
        results = {}
        for flag in ("1", "0"):
            with env("TOROID_PYTHON_CALL", flag):
                _capi._python_function = False  # looked for again under this setting
                c = boxed(compile_graph(make_fx(fn)(*xs), xs))
                for _ in range(3):
                    got = c(list(xs))
                part = c.compiled.steps[0][1]
                lean = [f for f in part._leans.values() if f is not None]
                self.assertEqual(len(lean), 1)
                if flag == "1" and _capi.lib().toroid_python_call_available():
                    self.assertIs(lean[0].func, _capi.python_function())
                elif flag == "0":
                    self.assertEqual(lean[0].__name__, "run")
                results[flag] = got
        _capi._python_function = False
        for a, b, w in zip(results["1"], results["0"], fn(*xs)):
            close(self, a, w)
            self.assertTrue(torch.equal(a, b))

    def test_lean_run_in_c_reports_errors(self):
        # An error of the run (an out of range gather position) and a Python exception of the
        # output allocation both reach the caller from the builtin lean run.
        from toroid import _capi, runtime
        if _capi.python_function() is None:
            self.skipTest("no builtin lean run in this process")
        fn = lambda w, i: w[i] * 2  # noqa: E731
        w, i = torch.randn(4, 3), torch.tensor([0, 3, 1])
        c = boxed(compile_graph(make_fx(fn)(w, i), [w, i]))
        for _ in range(3):
            close(self, c([w, i]), fn(w, i))
        with self.assertRaisesRegex(toroid.ToroidError, "out of range|out of bounds"):
            c([w, torch.tensor([0, 9, 1])])
        part = c.compiled.steps[0][1]

        class Refused(Exception):
            pass

        def refuse(*args):
            raise Refused("no memory for this output")
        real = runtime._empty_strided_cpu
        runtime._empty_strided_cpu = lambda: refuse
        try:
            part._leans.clear()  # made again, allocating with `refuse`
            part._guard = None
            with self.assertRaisesRegex(Refused, "no memory"):
                c([w, i])
        finally:
            runtime._empty_strided_cpu = real
            part._leans.clear()
            part._guard = None
        close(self, c([w, i]), fn(w, i))

    def test_lean_builtin_refuses_a_malformed_call(self):
        # The builtin lean run checks what it is given: a tuple of another length or a wrong
        # argument count is the library's error (ToroidError), a plan that is no tuple a Python
        # exception.
        from toroid import _capi
        run = _capi.python_function()
        if run is None:
            self.skipTest("no builtin lean run in this process")
        with self.assertRaisesRegex(toroid.ToroidError, "a plan of 2 fields, not 7"):
            run((1, 2), [])
        with self.assertRaisesRegex(toroid.ToroidError, r"takes \(plan, inputs\), got 1 arguments"):
            run((1, 2))
        with self.assertRaises(SystemError):
            run([1, 2, 3, 4, 5, 6, 7], [])

    def test_eager_result_of_another_dtype_than_traced_is_cast(self):
        # PyTorch's eager kernels and fake tensors disagree on a few dtypes (CUDA batch norm's
        # saved statistics in eval mode); a partition after such an op takes the traced dtype.
        fn = lambda x: torch.logcumsumexp(x, 0) * 2  # noqa: E731  (logcumsumexp runs in eager)
        x = torch.randn(5)
        c = compile_graph(make_fx(fn)(x), [x])
        node = next(s for kind, s in c.steps if kind == "eager")
        node.target = lambda *a, **k: torch.ops.aten.logcumsumexp.default(*a, **k).double()
        close(self, c(x), fn(x))

    def test_a_call_with_eager_steps_leaves_no_reference_cycle(self):
        # The call's tensors are freed when it returns, not when the cycle collector next runs
        # (a training loop would otherwise hold many steps' activations).
        import gc
        import weakref
        fn = lambda x: torch.logcumsumexp(x * 3, 0) * 2  # noqa: E731  (logcumsumexp runs in eager)
        x = torch.randn(5)
        c = compile_graph(make_fx(fn)(x), [x])
        self.assertTrue(any(kind == "eager" for kind, _ in c.steps))
        seen = []
        node = next(s for kind, s in c.steps if kind == "eager")
        target = node.target

        def recorded(*a, **k):
            r = target(*a, **k)
            seen.append(weakref.ref(r))
            return r
        node.target = recorded
        gc.disable()
        try:
            close(self, c(x), fn(x))
            self.assertEqual(len(seen), 1)
            self.assertIsNone(seen[0](), "the eager step's result outlived the call")
        finally:
            gc.enable()

    def test_constant_outputs_keep_the_single_partition_path(self):
        # A backward returns None for inputs that need no gradient: the call still goes straight
        # to its one partition, and the None stays in its place.
        x = torch.randn(3, 4)
        c = compile_graph(make_fx(lambda x: (x * 2, None, x.sum()))(x), [x])
        got = c(x)
        self.assertTrue(c._fast, "a graph with a None output left the single-partition path")
        self.assertIsNone(got[1])
        close(self, [got[0], got[2]], [x * 2, x.sum()])

    def test_inputs_given_up_are_freed_as_they_die(self):
        # A backward's inputs (saved activations) are handed over (free_inputs, boxed): the graph
        # runs in segments, and an input is let go of after the segment that reads it last.
        import weakref
        from toroid.runtime import SEGMENT_MIN_BYTES, boxed
        n = SEGMENT_MIN_BYTES // 4 // 4  # four inputs hold SEGMENT_MIN_BYTES
        xs = [torch.randn(n) for _ in range(8)]

        def chain(*a):
            y = a[0] * 2
            for x in a[1:]:
                y = y + x
            return (y,)
        want = chain(*xs)[0]
        traced = [torch.randn(n) for _ in range(8)]  # tracing keeps its example inputs: not the call's
        c = compile_graph(make_fx(chain)(*traced), traced, free_inputs=True)
        parts = [s for kind, s in c.steps if kind == "toroid"]
        self.assertEqual(len(parts), 2, "inputs of 2 x SEGMENT_MIN_BYTES make two segments")
        self.assertEqual([p.cuda_graphs for p in parts], [False, False], "segments' inputs move: no CUDA graphs")
        refs = [weakref.ref(x) for x in xs]
        alive_in_second = []

        class Probe:
            def __init__(self, part):
                self.part, self.inputs, self.outputs, self.donated = part, part.inputs, part.outputs, part.donated

            def __call__(self, args):
                alive_in_second.append([r() is not None for r in refs])
                return self.part(args)
        c.steps[-1] = ("toroid", Probe(parts[-1]))
        args = xs
        xs = None
        got = boxed(c)(args)[0]
        self.assertEqual(args, [], "a boxed call empties its argument list")
        self.assertEqual(alive_in_second, [[False] * 4 + [True] * 4], "inputs read only by the first segment are freed")
        close(self, got, want)
        # TOROID_BACKWARD_SEGMENTS sets the count (here one segment: inputs of 2 x 16 MiB in
        # one piece); a value that is not a positive integer is an error naming it.
        for value, pieces in (("1", 1), ("4", 2)):
            with env("TOROID_BACKWARD_SEGMENTS", value):
                one = compile_graph(make_fx(chain)(*traced), traced, free_inputs=True)
            self.assertEqual(len([s for kind, s in one.steps if kind == "toroid"]), pieces, value)
        with env("TOROID_BACKWARD_SEGMENTS", "many"):
            with self.assertRaisesRegex(toroid.ToroidError, "TOROID_BACKWARD_SEGMENTS='many': a positive integer"):
                compile_graph(make_fx(chain)(*traced), traced, free_inputs=True)
        # Without free_inputs: one partition.
        ys = [torch.randn(n) for _ in range(8)]
        whole = compile_graph(make_fx(chain)(*ys), ys)
        self.assertEqual(len(whole.steps), 1)
        self.assertTrue(whole.steps[0][1].cuda_graphs)

    def test_donated_inputs_are_reused_when_nothing_else_holds_them(self):
        # A backward's input that only one partition reads is donated (`input donated`): the
        # memory plan gives its memory to a later buffer. A call first checks that its list holds
        # the tensor alone (no other Python or C++ reference, no other tensor on its storage),
        # else it runs the graph compiled without donation.
        from toroid import runtime
        with counted_holders() as saved:
            def fn(a, w, v):
                h = torch.mm(a, w)  # a's last read: the next product's result takes its memory
                y = torch.mm(h, v)  # an output: it comes back in a's memory
                return torch.relu(y).sum(0), y
            w, v = torch.randn(32, 16), torch.randn(16, 32)
            traced = [torch.randn(64, 32), w, v]
            c = compile_graph(make_fx(fn)(*traced), traced, free_inputs=True, donated_inputs=[0])
            part = c.steps[0][1]
            self.assertEqual(part.donated, [0], part.text)
            self.assertIn("input donated : f32[64, 32]", part.text)
            a0 = torch.randn(64, 32)
            want = fn(a0, w, v)
            given = [a0.clone(), w, v]
            ptr = given[0].data_ptr()
            got = boxed(c)(given)
            close(self, got[0], want[0])
            close(self, got[1], want[1])
            self.assertEqual(got[1].data_ptr(), ptr, "y is returned in a's memory")
            # ... as a tensor of its own, not a view of the dead a: a later step may donate it.
            self.assertIsNone(got[1]._base)
            self.assertTrue(runtime._exclusive(got, 1))
            self.assertEqual(part.donations, [1, 0])
            want = want[0]
            # The caller still holds it: the graph without donation runs, and leaves it as it was.
            held = a0.clone()
            close(self, boxed(c)([held, w, v])[0], want)
            self.assertEqual(part.donations, [1, 1])
            self.assertTrue(torch.equal(held, a0))
            self.assertNotIn("donated", part._kept().text)
            close(self, boxed(c)([a0.clone(), w, v])[0], want)
            self.assertEqual(part.donations, [2, 1])
            if saved:  # torch counts C++ holders: a view's base holds the storage too
                base = a0.clone()
                close(self, boxed(c)([base.view(64, 32), w, v])[0], want)
                self.assertEqual(part.donations, [2, 2])
                self.assertTrue(torch.equal(base, a0))
                # A view whose base only the view holds (a backward's saved activation often is
                # one): donated.
                got = boxed(c)([a0.clone().view(64, 32), w, v])
                close(self, got[0], want)
                self.assertEqual(part.donations, [3, 2])
                # Two views of one base: each holds the storage, neither is donated.
                both = a0.clone()
                second = both.view(2048)
                del both
                close(self, boxed(c)([second.view(64, 32), w, v])[0], want)
                self.assertEqual(part.donations, [3, 3])
                self.assertTrue(torch.equal(second.view(64, 32), a0))
            # An input not among donated_inputs, without free_inputs, or with TOROID_DONATE_INPUTS=0:
            # nothing is donated.
            self.assertEqual(compile_graph(make_fx(fn)(*traced), traced, free_inputs=True).steps[0][1].donated, [])
            self.assertEqual(compile_graph(make_fx(fn)(*traced), traced, donated_inputs=[0]).steps[0][1].donated, [])
            with env("TOROID_DONATE_INPUTS", "0"):
                self.assertEqual(compile_graph(make_fx(fn)(*traced), traced, free_inputs=True,
                                               donated_inputs=[0]).steps[0][1].donated, [])

    def test_results_of_one_partition_are_donated_to_the_next(self):
        # A backward's tensors that a partition computes and only the next reads are donated
        # there: nothing of the call (a loop variable, the first result's view of a) may hold
        # them. BERT's backward declined 7 of its 8 partitions' donations before.
        with counted_holders():
            def fn(a, w):
                h = torch.mm(a, w)  # in a's memory
                g = torch.relu(h)  # the first partition's last result: donated to the second
                e = torch.logcumsumexp(h, 0)  # eager: two partitions
                return torch.mm(g, w.t()) + e.sum(0)
            a, w = torch.randn(64, 32), torch.randn(32, 32)
            c = compile_graph(make_fx(fn)(a, w), [a, w], free_inputs=True, donated_inputs=[0])
            parts = [s for kind, s in c.steps if kind == "toroid"]
            self.assertEqual([len(p.donated) for p in parts], [1, 2], [p.text for p in parts])
            close(self, boxed(c)([a.clone(), w]), fn(a, w))
            self.assertEqual([p.donations for p in parts], [[1, 0], [1, 0]])

    def test_inputs_given_up_with_eager_nodes_first(self):
        # A backward (free_inputs) that starts with two eager nodes in a row: no run of compiled
        # nodes between them to segment (resnet18's and ViT's training steps raised IndexError).
        fn = lambda x, y: (torch.logcumsumexp(torch.logcumsumexp(x, 0), 0) + y,)  # noqa: E731
        x, y = torch.randn(6), torch.randn(6)
        c = compile_graph(make_fx(fn)(x, y), [x, y], free_inputs=True)
        self.assertEqual([kind for kind, _ in c.steps], ["eager", "eager", "toroid"])
        close(self, c(x, y)[0], fn(x, y)[0])

    def test_backward_segments_keep_a_call_with_its_getitems(self):
        # The input that dies at max.dim holds most of the bytes, so a segment ends there; the cut
        # goes after max's getitems (a piece cannot return the tuple: resnet18's training step ran
        # its convolution_backward in eager).
        fn = lambda a, b: (torch.max(a, 0)[0] + b.sum(0), torch.max(a, 0)[1])  # noqa: E731
        a, b = torch.randn(2048, 4096), torch.randn(1024, 4096)  # 32 MiB and 16 MiB
        c = compile_graph(make_fx(fn)(a, b), [a, b], free_inputs=True)
        self.assertEqual(c.fallbacks, [])
        self.assertEqual([kind for kind, _ in c.steps], ["toroid", "toroid"])
        got, want = c(a, b), fn(a, b)
        close(self, got[0], want[0])
        self.assertTrue(torch.equal(got[1], want[1]))

    def test_environment_flags_take_0_or_1(self):
        from toroid._capi import env_flag
        old = os.environ.pop("TOROID_SEGMENT_BACKWARD", None)
        try:
            self.assertTrue(env_flag("TOROID_SEGMENT_BACKWARD", True))  # unset: the default
            os.environ["TOROID_SEGMENT_BACKWARD"] = "0"
            self.assertFalse(env_flag("TOROID_SEGMENT_BACKWARD", True))
            os.environ["TOROID_SEGMENT_BACKWARD"] = "on"
            with self.assertRaisesRegex(toroid.ToroidError, "TOROID_SEGMENT_BACKWARD='on': 0 \\(off\\) or 1 \\(on\\)"):
                env_flag("TOROID_SEGMENT_BACKWARD", True)
        finally:
            os.environ.pop("TOROID_SEGMENT_BACKWARD", None)
            if old is not None:
                os.environ["TOROID_SEGMENT_BACKWARD"] = old

    def test_rank_mismatch_is_an_error(self):
        c = compile_graph(make_fx(lambda x: x + 1)(torch.ones(2, 3)), [torch.ones(2, 3)])
        with self.assertRaisesRegex(toroid.ToroidError, "has 1 dims"):
            c(torch.ones(6))

    def test_threads_share_one_callable(self):
        # Eight threads, one callable over symbolic sizes, shapes changing every call (new call
        # plans are made while other threads run older ones).
        fn = lambda x, y: torch.tanh(x) * y + x.sum(-1, keepdim=True)  # noqa: E731
        example = [torch.randn(8, 16), torch.randn(8, 16)]
        c = compile_graph(make_fx(fn, tracing_mode="symbolic")(*example), example)
        shapes = [(8, 16), (3, 5), (2, 2), (33, 7), (8, 16), (2, 64), (17, 3)]
        wrong, errors = [], []

        def work(seed):
            g = torch.Generator().manual_seed(seed)
            try:
                for k in range(100):
                    shape = shapes[(seed + k) % len(shapes)]
                    x, y = torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)
                    if not torch.allclose(c(x, y), fn(x, y), atol=1e-5):
                        wrong.append((seed, shape))
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.maxDiff = None
        self.assertEqual((wrong, errors), ([], []))


class InputMutations(unittest.TestCase):
    """An optimizer-style step whose functional graph ends in copy_ into its inputs (what
    keep_inference_input_mutations gives torch.compile): compiled, no fallback, and the caller's
    tensors are updated, also when an input had to be made contiguous for the call."""

    @staticmethod
    def step(p, g, m):
        m.mul_(0.9).add_(g, alpha=0.1)
        p.add_(m, alpha=-0.01)

    def graph(self, example):
        try:
            from functorch.experimental import functionalize
        except ImportError:
            from torch.func import functionalize
        return make_fx(functionalize(self.step, remove="mutations"))(*example)

    def check(self, p, g, m):
        ex = [torch.randn(6, 4) for _ in range(3)]
        c = compile_graph(self.graph(ex), ex, name="sgd_momentum")
        self.assertEqual(c.fallbacks, [])
        p0, m0 = p.clone(), m.clone()
        c(p, g, m)
        self.step(p0, g, m0)
        close(self, p, p0, what="p")
        close(self, m, m0, what="m")

    def test_inputs_written_in_place(self):
        self.check(torch.randn(6, 4), torch.randn(6, 4), torch.randn(6, 4))

    def test_input_made_contiguous_is_copied_back(self):
        self.check(torch.randn(4, 6).t(), torch.randn(6, 4), torch.randn(4, 6).t())

    def run_step(self, step, example):
        try:
            from functorch.experimental import functionalize
        except ImportError:
            from torch.func import functionalize
        c = compile_graph(make_fx(functionalize(step, remove="mutations"))(*[e.clone() for e in example]),
                          [e.clone() for e in example], name=step.__name__)
        got, want = [e.clone() for e in example], [e.clone() for e in example]
        c(*got)
        step(*want)
        for i, (g, w) in enumerate(zip(got, want)):
            close(self, g, w, what="input %d" % i)
        return c

    def test_copies_read_the_old_values(self):
        """Each written input's new value comes from the old values of all: %c's reads the %a
        that the first copy writes (computed before any copy), and the copies of one shape share a
        kernel."""
        def writes(a, b, c, s):
            na, nb, nc = a + s, b * 2, c + a
            a.copy_(na)
            b.copy_(nb)
            c.copy_(nc)
            s.add_(1)
        c = self.run_step(writes, [torch.randn(64), torch.randn(64), torch.randn(64), torch.tensor(1.0)])
        self.assertEqual(c.fallbacks, [])

    def test_adam_like_step(self):
        def adam(p, g, m, v, step):
            step.add_(1)
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).add_(g * g * 0.001)
            denom = (v.sqrt() / (1 - 0.999 ** step).sqrt()).add_(1e-8)
            p.add_(m / denom * (-0.01 / (1 - 0.9 ** step)))
        c = self.run_step(adam, [torch.randn(32, 8), torch.randn(32, 8), torch.randn(32, 8), torch.rand(32, 8),
                                 torch.tensor(3.0)])
        self.assertEqual(c.fallbacks, [])

    def test_compiling_leaves_the_example_inputs_alone(self):
        """A graph that writes its input (an in-place op make_fx kept) is run on copies when
        compile_graph looks for its values: the example tensor (a view, at an offset) is unchanged
        and the first call reads it as the caller left it."""
        def fn(x):
            x.add_(1)
            return x * 2
        base = torch.zeros(6)
        x = base[2:]
        c = compile_graph(make_fx(fn)(x.clone()), [x])
        self.assertEqual(base.tolist(), [0.0] * 6)
        self.assertEqual(c(x).tolist(), [2.0] * 4)
        self.assertEqual(base.tolist(), [0.0, 0.0] + [1.0] * 4)


class IntegerDivision(unittest.TestCase):
    def test_division_by_zero_raises_like_eager(self):
        x = torch.tensor([7, -7, 9, 5])
        y = torch.tensor([2, 3, 0, 1])
        cases = [("floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
                 ("trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
                 ("remainder", torch.remainder), ("fmod", torch.fmod)]
        for name, fn in cases:
            for dtype in (torch.int32, torch.int64):
                with self.subTest(op=name, dtype=dtype):
                    a, b = x.to(dtype), y.to(dtype)
                    with self.assertRaisesRegex(RuntimeError, "ZeroDivisionError"):
                        fn(a, b)  # eager, for comparison
                    ones = torch.ones_like(b)  # make_fx runs the ops: trace on safe values
                    c = compile_graph(make_fx(fn)(a, ones), [a, ones])
                    with self.assertRaisesRegex(toroid.ToroidError, "ZeroDivisionError"):
                        c(a, b)
                    close(self, c(a, ones), fn(a, ones), what=name)  # the callable still works

    def test_most_negative_by_minus_one_wraps(self):
        for dtype in (torch.int32, torch.int64):
            low = torch.iinfo(dtype).min
            a = torch.tensor([low, 7], dtype=dtype)
            b = torch.tensor([-1, -1], dtype=dtype)
            fn = lambda a, b: (torch.div(a, b, rounding_mode="floor"), torch.remainder(a, b))  # noqa: E731
            safe = torch.ones_like(a)  # eager (and so make_fx) traps on the most negative value // -1
            c = compile_graph(make_fx(fn)(safe, b), [safe, b])
            q, r = c(a, b)
            self.assertEqual(q.tolist(), [low, -7])
            self.assertEqual(r.tolist(), [0, 0])


class Views(unittest.TestCase):
    def test_as_strided_of_partial_views(self):
        base = torch.arange(20.0)
        cases = [(lambda x: torch.as_strided(x, (2, 2), (1, 2)) * 2, base[2:], False),
                 (lambda x: torch.as_strided(x, (2, 2), (2, 1), 5) + 1, base[2:12], False),
                 # past the view's own elements (within its storage): PyTorch allows it; eager runs it
                 (lambda x: torch.as_strided(x, (2,), (1,), 15) + 1, base[2:6], True),
                 (lambda x: torch.as_strided(x, (2, 2), (1, 2), 0) + 1, base[2:], True)]
        for fn, x, eager in cases:
            c = compile_graph(make_fx(fn)(x), [x])
            self.assertEqual([op for _, op, _ in c.fallbacks], ["aten.as_strided.default"] if eager else [])
            self.assertTrue(torch.equal(c(x), fn(x)))


class ReferenceKernelFallbacks(unittest.TestCase):
    def test_integer_matmul_runs_in_eager_and_is_logged(self):
        a = torch.randint(-4, 4, (16, 16))
        fn = lambda a, b: (a @ b).relu() * 2  # noqa: E731
        with self.assertLogs("toroid", level="WARNING") as logs:
            c = compile_graph(make_fx(fn)(a, a), [a, a])
        self.assertEqual([op for _, op, _ in c.fallbacks], ["aten.mm.default"])
        self.assertTrue(any("no matmul library for i64" in m for m in logs.output), logs.output)
        self.assertTrue(torch.equal(c(a, a), fn(a, a)))

    def test_bf16_matmuls_compile_on_the_cpu(self):
        # fp32 BLAS on converted operands, rounded once: within bf16's rounding of PyTorch's.
        g = torch.Generator().manual_seed(0)
        x, w = torch.randn(32, 48, generator=g).bfloat16(), torch.randn(64, 48, generator=g).bfloat16()
        b, y = torch.randn(64, generator=g).bfloat16(), torch.randn(4, 8, 16, generator=g).bfloat16()
        fn = lambda x, w, b, y: (torch.nn.functional.linear(x, w, b).relu(), torch.bmm(y, y.transpose(1, 2)))  # noqa: E731
        c = compile_graph(make_fx(fn)(x, w, b, y), [x, w, b, y])
        self.assertEqual(c.fallbacks, [])
        for got, want in zip(c(x, w, b, y), fn(x, w, b, y)):
            self.assertEqual(got.dtype, torch.bfloat16)
            close(self, got, want, 5e-2)

    def test_ops_with_only_a_reference_kernel_run_in_eager(self):
        fn = lambda x: torch.logcumsumexp(x, 0) + x.sum()  # noqa: E731
        x = torch.randn(8, 8)
        with self.assertLogs("toroid", level="WARNING"):
            c = compile_graph(make_fx(fn)(x), [x])
        self.assertEqual([op for _, op, _ in c.fallbacks], ["aten.logcumsumexp.default"])
        close(self, c(x), fn(x))

    def test_sort_scan_and_scatters_have_cpu_kernels(self):
        # Library kernels on the CPU (no eager fallback): sort, topk, cumsum, cumprod, scatter_add,
        # index_add and index_put with accumulate.
        def fn(x, i):
            v, k = torch.sort(x, -1, descending=True)
            t = torch.topk(x, 3, 0)[0]
            s = x.scatter_add(0, i, x) + torch.cumsum(x, 1) + torch.cumprod(x * 0.1 + 1, 0)
            a = x.index_add(0, i[:, 0], x, alpha=2.0)
            p = x.index_put((i[:, 1],), x, accumulate=True)
            return v, k, t, s, a, p
        x, i = torch.randn(8, 8), torch.randint(0, 8, (8, 8))
        c = compile_graph(make_fx(fn)(x, i), [x, i])
        self.assertEqual(c.fallbacks, [])
        for got, want in zip(c(x, i), fn(x, i)):
            close(self, got, want, 1e-4)

    def test_f32_matmul_and_conv_stay_compiled(self):
        fn = lambda x, w: F.conv2d(x, w).flatten(1) @ torch.ones(4 * 9, 2)  # noqa: E731
        x, w = torch.randn(2, 3, 5, 5), torch.randn(4, 3, 3, 3)
        c = compile_graph(make_fx(fn)(x, w), [x, w])
        self.assertEqual(c.fallbacks, [])
        close(self, c(x, w), fn(x, w), 1e-3)


class NumericsFlags(unittest.TestCase):
    def test_tf32_flags_are_passed_to_the_compile(self):
        # PyTorch's allow_tf32 flags, as they are when a graph compiles, become its compile
        # options (the GPU's library calls follow them: tests/lit/compile/tf32.test).
        from unittest import mock
        from toroid import _capi, runtime
        seen = []
        real = _capi.Module

        def spy(*args, **kwargs):
            seen.append((kwargs["tf32_convolutions"], kwargs["tf32_matmuls"]))
            return real(*args, **kwargs)
        fn = lambda a, b: a @ b  # noqa: E731
        a = torch.randn(4, 4)
        saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        try:
            with mock.patch.object(runtime._capi, "Module", spy):
                for flags in [(True, False), (False, True)]:
                    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
                    compile_graph(make_fx(fn)(a, a), [a, a])
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
        self.assertEqual(seen, [(True, False), (False, True)])

    def test_bf16_values_round_where_stored_unless_emulating_casts(self):
        # (x + 1) - 1 in bf16: eager rounds x + 1 to 1 (8 significant bits), then gives 0. By
        # default the fused kernel keeps x + 1 in float, as Inductor does, and gives x back;
        # emulate_precision_casts rounds each op's result, as eager.
        from unittest import mock
        from toroid import runtime
        fn = lambda a: (a + 1) - 1  # noqa: E731
        x = torch.full((64,), 0.001, dtype=torch.bfloat16)
        for emulate, want in [(False, x), (True, fn(x))]:
            with mock.patch.object(runtime, "_inductor_emulates_precision_casts", lambda: emulate):
                got = boxed(compile_graph(make_fx(fn)(x), [x]))([x])
            self.assertEqual(got.dtype, torch.bfloat16)
            self.assertTrue(torch.equal(got, want), (emulate, got[:4]))
        self.assertTrue(torch.equal(fn(x), torch.zeros_like(x)))


class KernelAnalysis(unittest.TestCase):
    """toroid.analyze_kernel: the mutation analysis of user kernels through the C ABI."""
    INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lit", "kernels", "Inputs")

    def read(self, *path):
        with open(os.path.join(self.INPUTS, *path)) as f:
            return f.read()

    def written(self, kernel):
        return [p["name"] for p in kernel["params"] if p["written"]]

    def test_ttir_and_ptx(self):
        (add,) = toroid.analyze_kernel(self.read("ttir", "add.ttir"), "ttir")
        self.assertEqual(add["kernel"], "add_kernel")
        self.assertEqual(self.written(add), ["%out_ptr"])
        self.assertEqual([p["name"] for p in add["params"] if p["read"]], ["%x_ptr", "%y_ptr"])
        kernels = {k["kernel"]: k for k in toroid.analyze_kernel(self.read("conservative.ptx"), "ptx")}
        self.assertEqual(self.written(kernels["pointer_walk"]), ["pointer_walk_param_1"])
        self.assertIn("indirect call", kernels["calls_indirect"]["notes"][0])

    def test_cuda_source(self):
        src = 'extern "C" __global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }'
        try:
            (k,) = toroid.analyze_kernel(src, "cuda")
        except toroid.ToroidError as e:
            if "NVRTC" in str(e) or "without CUDA" in str(e):
                self.skipTest(str(e))
            raise
        self.assertEqual(self.written(k), ["k_param_1"])

    def test_launch_text_is_a_valid_call(self):
        """The call text toroid.cuda_kernel's launches become (user_kernels.launch_call_text)
        parses and verifies: compiling it for the CPU stops only at lowering, which says the
        kernel needs a CUDA device. Sources with quotes, backslashes and newlines survive."""
        import types
        from toroid import user_kernels as uk
        src = ('// a "quoted" comment \\ and a tab\t\n'
               'extern "C" __global__ void axpy(float* z, float a, const float* x, int n) {\n'
               '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) z[i] += a * x[i];\n}\n')
        try:
            (analysis,) = toroid.analyze_kernel(src, "cuda")
        except toroid.ToroidError as e:
            self.skipTest(str(e))
        kernel = types.SimpleNamespace(name="axpy", source=src, params=analysis["params"])
        call, writes = uk.launch_call_text(kernel, ["%z", "%x"], ["0.5", "8"], "tfti", ["1"], ["8"], 0, None)
        self.assertEqual(writes, [0])
        self.assertIn("order=[0, 2, 1, 3]", call)
        text = ("graph @g functional {\n  %z = input : f32[8]\n  %x = input : f32[8]\n"
                "  %r = " + call + " : f32[8]\n  output %r\n}\n")
        with self.assertRaisesRegex(toroid.ToroidError, "runs on a CUDA device, but this program is compiled for the cpu"):
            toroid._capi.Module(text, device="cpu")
        # The same launch with its source in the graph's kernel table, named by source and kernel
        # (another source's `axpy` is another entry):
        table = {}
        kernel.key = "axpy_0123abcd"
        call, _ = uk.launch_call_text(kernel, ["%z", "%x"], ["0.5", "8"], "tfti", ["1"], ["8"], 0, table=table)
        self.assertNotIn("source=", call)
        self.assertTrue(call.startswith('higher_order.user_kernel_functional("axpy_0123abcd"'), call)
        self.assertIn('entry="axpy"', table["axpy_0123abcd"])
        text = ("graph @g functional {\n" + table["axpy_0123abcd"] + "\n  %z = input : f32[8]\n  %x = input : f32[8]\n"
                "  %r = " + call + " : f32[8]\n  output %r\n}\n")
        with self.assertRaisesRegex(toroid.ToroidError, "runs on a CUDA device, but this program is compiled for the cpu"):
            toroid._capi.Module(text, device="cpu")

    def test_compile_triton_reads_the_compiled_kernel(self):
        """user_kernels.compile_triton against a stand-in for Triton's JITFunction whose compiled
        kernel is Triton 3.6's TTIR and PTX of add_kernel: the runtime
        parameters, the two trailing scratch pointers, what the TTIR says is written, the
        launch shape. (The real Triton runs on the GPU machine: tools/gpu/user_kernels_check.py.)"""
        import sys
        import types
        from toroid import user_kernels as uk
        ttir, ptx = self.read("ttir", "add.ttir"), self.read("triton-ptx", "add.ptx")

        class Mock:
            def __init__(self, dtype):
                self.dtype = dtype

            @staticmethod
            def wrap_dtype(d):
                return Mock(d)
        jit = types.ModuleType("triton.runtime.jit")
        jit.MockTensor = Mock
        saved = {k: sys.modules.get(k) for k in ("triton", "triton.runtime", "triton.runtime.jit")}
        sys.modules.update({"triton": types.ModuleType("triton"), "triton.runtime": types.ModuleType("triton.runtime"),
                            "triton.runtime.jit": jit})
        calls = []

        class Fn:
            __name__ = "add_kernel"
            arg_names = ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"]

            def warmup(self, grid, **kw):
                calls.append(kw)
                md = types.SimpleNamespace(name="add_kernel", num_warps=4, shared=0, global_scratch_size=0,
                                           profile_scratch_size=0, num_ctas=1, cluster_dims=(1, 1, 1))
                sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
                return types.SimpleNamespace(metadata=md, src=types.SimpleNamespace(signature=sig),
                                             asm={"ptx": ptx, "ttir": ttir, "cubin": b"\x7fELF-cubin"})
        t = types.SimpleNamespace(dtype="f32", shape=(8,))
        try:
            launch = uk.compile_triton(Fn(), {"x_ptr": t, "y_ptr": t, "out_ptr": t, "n": 1000, "BLOCK": 1024})
        except toroid.ToroidError as e:
            self.skipTest(str(e))
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        self.assertEqual(calls[0]["BLOCK"], 1024)
        self.assertEqual(calls[0]["x_ptr"].dtype, "f32")
        self.assertEqual(launch.runtime, ["x_ptr", "y_ptr", "out_ptr", "n"])
        self.assertEqual(launch.extra, 2)
        self.assertEqual(launch.written, {"out_ptr"})
        self.assertEqual(launch.aligned, {"x_ptr", "y_ptr", "out_ptr"})
        self.assertEqual((launch.entry, launch.num_warps, launch.shared), ("add_kernel", 4, 0))
        # The cubin travels in base64 with the PTX and the TTIR.
        self.assertEqual(launch.cubin, b"\x7fELF-cubin")
        entry = uk.table_entry("add_1", "ptx", launch.ptx, launch.entry, launch.ttir, launch.cubin)
        self.assertTrue(entry.endswith(', cubin="f0VMRi1jdWJpbg=="'), entry[-60:])

    def test_bad_input_is_an_error(self):
        with self.assertRaisesRegex(toroid.ToroidError, "unknown kernel kind 'sass'"):
            toroid.analyze_kernel("", "sass")
        with self.assertRaisesRegex(toroid.ToroidError, "the body of @k is not closed"):
            toroid.analyze_kernel(self.read("ttir", "unclosed.ttir"), "ttir")


class BackendOptions(unittest.TestCase):
    def test_modes_and_options(self):
        for mode in (None, "default", "reduce-overhead", "max-autotune"):
            self.assertEqual(_check_options(mode, None), {})
        self.assertEqual(_check_options(None, {"dump_dir": "/tmp/x"}), {"dump_dir": "/tmp/x"})
        with self.assertRaisesRegex(ValueError, "unknown mode 'fast'"):
            _check_options("fast", None)
        with self.assertRaisesRegex(ValueError, "unknown option\\(s\\) 'triton.cudagraphs'; accepted: dump_dir"):
            _check_options(None, {"triton.cudagraphs": True})

    def test_export_is_reachable_from_the_package(self):
        self.assertTrue(callable(toroid.export.load))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    unittest.main(verbosity=2)
