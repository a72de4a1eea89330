#!/usr/bin/env python3
"""Seeded random-graph test: generates random functional .tir graphs and checks that the compiled
code matches the reference interpreter.

Each graph has 1-4 inputs with symbolic sizes and a chain of pointwise ops (unary, binary with
broadcasting against size-1 dims and scalars, comparisons + where), reductions (with and without
keepdim, over any dims), views (permute, transpose, unsqueeze, squeeze, slice, select, expand,
view/reshape), casts, cat and softmax-like patterns, and one to three outputs (sometimes a view of
an intermediate). The generator derives every result type itself (the rules of toroid's meta
functions, restricted to this op subset: ranks <= 3, symbol hints >= 2, decisions by hint), and
`toroidc run G --random-inputs --seed K --check` compiles, runs and compares each graph.

Usage: random_graphs.py --seed S --count N --toroidc PATH [--keep DIR] [--jobs J] [--only I]
                        [--device cpu|cuda|cuda-compile]
Prints one line per failure (with the graph and toroidc's output) and finally `N passed, M failed`.
"""
import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------
# Symbolic sizes: polynomials over the graph's symbols with non-negative integer coefficients.


class Poly:
    __slots__ = ("terms",)

    def __init__(self, terms=None):
        self.terms = {m: c for m, c in (terms or {}).items() if c != 0}

    @staticmethod
    def const(c):
        return Poly({(): c})

    @staticmethod
    def sym(name):
        return Poly({(name,): 1})

    def __add__(self, o):
        o = o if isinstance(o, Poly) else Poly.const(o)
        t = dict(self.terms)
        for m, c in o.terms.items():
            t[m] = t.get(m, 0) + c
        return Poly(t)

    def __mul__(self, o):
        o = o if isinstance(o, Poly) else Poly.const(o)
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return Poly(t)

    def __eq__(self, o):
        o = o if isinstance(o, Poly) else Poly.const(o)
        return self.terms == o.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    def as_int(self):
        if not self.terms:
            return 0
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def ev(self, hints):
        total = 0
        for m, c in self.terms.items():
            v = c
            for s in m:
                v *= hints[s]
            total += v
        return total

    def __str__(self):
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
            fs = list(m)
            if c != 1 or not fs:
                fs = [str(c)] + fs
            parts.append("*".join(fs))
        return " + ".join(parts)


ONE = Poly.const(1)
ZERO = Poly.const(0)


def contiguous_strides(sizes):
    st = [None] * len(sizes)
    run = ONE
    for i in reversed(range(len(sizes))):
        st[i] = run
        run = run * (ONE if sizes[i].as_int() == 0 else sizes[i])
    return st


# ---------------------------------------------------------------------------------------------
# Tensors and the meta rules (mirroring src/ops/meta_util.cpp for ranks <= 3, decided by hints).

FLOATS = ("f32", "f64", "bf16")
TORCH_DTYPE = {"f32": "torch.float32", "f64": "torch.float64", "bf16": "torch.bfloat16",
               "i64": "torch.int64", "bool": "torch.bool"}


def is_float(dt):
    return dt in FLOATS


ORDER = ["bool", "i64", "bf16", "f32", "f64"]


def promote_types(a, b):
    return max(a, b, key=ORDER.index)


def combine(higher, lower):
    if higher is None or lower is None:
        return higher if higher is not None else lower
    if is_float(higher):
        return higher
    if higher == "bool" or is_float(lower):
        return promote_types(higher, lower)
    return higher


def promote(tensors, numbers=()):
    """result_type of tensors (T objects or dtype strings, taken as dim > 0) and Python numbers
    ('bool', 'int', 'float'), as src/ops/meta_util.cpp: dim tensors, then zero-dim ones, then numbers."""
    dim = zero = wrapped = None
    for t in tensors:
        dt, rank = (t, 1) if isinstance(t, str) else (t.dtype, t.rank)
        if rank == 0:
            zero = dt if zero is None else promote_types(zero, dt)
        else:
            dim = dt if dim is None else promote_types(dim, dt)
    for n in numbers:
        dt = {"bool": "bool", "int": "i64", "float": "f32"}[n]
        wrapped = dt if wrapped is None else promote_types(wrapped, dt)
    r = combine(dim, combine(zero, wrapped))
    return r or "f32"


# Reductions whose float result may be 0 in one summation order and not in another.
CANCELLING = ("aten.sum.dim_IntList", "aten.mean.dim", "aten.var.correction", "aten.convolution.default",
              "aten.convolution_backward.default")


class T:
    """A tensor value: name, dtype, sizes, strides, offset and the storage's first value."""

    def __init__(self, name, dtype, sizes, strides=None, offset=ZERO, base=None):
        self.name, self.dtype, self.sizes = name, dtype, list(sizes)
        self.strides = list(strides) if strides is not None else contiguous_strides(sizes)
        self.offset, self.base = offset, base
        self.mag = math.inf  # a bound on |element| (Gen.magnitude), set when emitted
        # Computed from a float sum, mean or var: a value exact arithmetic may give as 0 (the
        # mean of cat(-x, x)) comes out a few ulps away in another summation order.
        self.cancels = False
        # The graph inputs it is computed from, and whether it divides, element by element, two
        # values computed from a common one (softmax(x) / exp(x - max): equal elements in exact
        # arithmetic, whose order then follows rounding, so an argmax over them picks by the last
        # bit). softmax's own division by its row sum (another shape) keeps its argmax.
        self.sources = frozenset([name]) if name.startswith("x") else frozenset()
        self.ratio = False

    @property
    def rank(self):
        return len(self.sizes)

    @property
    def root(self):
        return self.base or self.name

    def type_str(self):
        attrs = []
        if self.strides != contiguous_strides(self.sizes):
            attrs.append("strides=[" + ", ".join(map(str, self.strides)) + "]")
        if self.offset != ZERO:
            attrs.append("offset=" + str(self.offset))
        if self.base:
            attrs.append("storage=%" + self.base)
        s = f"{self.dtype}[{', '.join(map(str, self.sizes))}]"
        return s + ("{" + ", ".join(attrs) + "}" if attrs else "")


class Meta:
    def __init__(self, hints):
        self.h = hints

    def v(self, p):
        return p.ev(self.h)

    def is_contiguous(self, sizes, strides):
        if any(s.as_int() == 0 for s in sizes):
            return True
        exp = 1
        for i in reversed(range(len(sizes))):
            if self.v(sizes[i]) == 1:
                continue
            if self.v(strides[i]) != exp:
                return False
            exp *= self.v(sizes[i])
        return True

    def dense(self, sizes, strides):
        n = len(sizes)
        if n == 0:
            return True
        if n == 1:
            return self.v(sizes[0]) <= 1 or self.v(strides[0]) == 1
        big = [d for d in range(n) if self.v(sizes[d]) > 1]
        big.sort(key=lambda d: self.v(strides[d]))  # stable, as std::stable_sort
        req = 1
        for d in big:
            if self.v(strides[d]) != req:
                return False
            req *= self.v(sizes[d])
        return True

    @staticmethod
    def order_dims(n, cmp):
        perm = [n - 1 - i for i in range(n)]
        for i in range(1, n):
            d1 = i
            for d0 in range(i - 1, -1, -1):
                c = cmp(perm[d0], perm[d1])
                if c > 0:
                    perm[d0], perm[d1] = perm[d1], perm[d0]
                    d1 = d0
                elif c < 0:
                    break
        return perm

    def preserve(self, sizes, strides):
        """empty_like's preserve format: a dense layout's strides, else dense strides in the
        input's dims' order (PyTorch's infer_dense_strides)."""
        if self.dense(sizes, strides):
            return list(strides)
        return self.dense_in_order(sizes, self.dims_by_stride(sizes, [strides]), skip_size1=True)

    def dims_by_stride(self, shape, stride_lists):
        """The dims from innermost out, by the first of `stride_lists` (per dim, 0 for a
        broadcast) that orders them (equal strides: the smaller size inner), as the meta
        functions' order_dims."""
        def cmp(d0, d1):
            for s in stride_lists:
                a, b = self.v(s[d0]), self.v(s[d1])
                if a == 0 or b == 0:
                    continue
                if a < b:
                    return -1
                if a > b:
                    return 1
                if self.v(shape[d1]) < self.v(shape[d0]):
                    return 1
            return 0
        return self.order_dims(len(shape), cmp)

    def dense_in_order(self, shape, perm, skip_size1=False):
        out = [None] * len(shape)
        run = ONE
        for d in perm:
            out[d] = run
            if not skip_size1 or self.v(shape[d]) > 1:
                run = run * shape[d]
        return out

    def elementwise_strides(self, shape, ins, has_numbers):
        n = len(shape)
        if not ins or n == 0:
            return contiguous_strides(shape)
        if not has_numbers and all(m.sizes == shape for m in ins):
            if all(self.is_contiguous(m.sizes, m.strides) for m in ins):
                return contiguous_strides(shape)
            if all(self.dense(m.sizes, m.strides) for m in ins):
                if all(m.strides == ins[-1].strides for m in ins):
                    return list(ins[-1].strides)
        st = []
        for m in ins:
            s = [ZERO] * n
            off = n - m.rank
            for i in range(m.rank):
                bc = m.sizes[i] != shape[off + i] and self.v(m.sizes[i]) == 1 and self.v(shape[off + i]) != 1
                s[off + i] = ZERO if bc else m.strides[i]
            st.append(s)

        perm = self.dims_by_stride(shape, st)
        if perm == [n - 1 - i for i in range(n)]:
            return contiguous_strides(shape)
        return self.dense_in_order(shape, perm)


def broadcast(a, b):
    """Broadcast shape of a and b (sizes equal or literal 1), or None."""
    n = max(len(a), len(b))
    a = [ONE] * (n - len(a)) + list(a)
    b = [ONE] * (n - len(b)) + list(b)
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif x == ONE:
            out.append(y)
        elif y == ONE:
            out.append(x)
        else:
            return None
    return out


# ---------------------------------------------------------------------------------------------
# The generator.

UNARY_FLOAT = [
    ("neg", "aten.neg.default"), ("abs", "aten.abs.default"), ("exp", "aten.exp.default"),
    ("sin", "aten.sin.default"), ("cos", "aten.cos.default"), ("tanh", "aten.tanh.default"),
    ("sigmoid", "aten.sigmoid.default"), ("relu", "aten.relu.default"), ("erf", "aten.erf.default"),
    ("floor", "aten.floor.default"), ("expm1", "aten.expm1.default"),
]
# Ops whose result error grows with |argument| (exp's relative error and sin/cos's absolute
# error are the argument's absolute error): applied only to arguments bounded by these, so that
# rounding differences (a reduction's order) stay inside the comparison's tolerance.
ILL_CONDITIONED = {"aten.exp.default": 4.0, "aten.expm1.default": 4.0,
                   "aten.sin.default": 8.0, "aten.cos.default": 8.0}
# Steps at integers: a value that cancels (T.cancels) lands a few ulps to either side of one in
# another summation order (a vectorized mean of cat(x, -x)), and floor turns that into 1.0.
DISCONTINUOUS = {"aten.floor.default"}
BOUNDED_BY_ONE = {"aten.sin.default", "aten.cos.default", "aten.tanh.default", "aten.sigmoid.default",
                  "aten.erf.default", "aten.rsqrt.default", "aten.reciprocal.default",
                  "aten.logical_not.default", "aten.any.dims"}
# ops that need a non-negative (or positive) argument: applied to abs(x) (+ 1)
SAFE_FLOAT = [("sqrt", "aten.sqrt.default", False), ("log", "aten.log.default", True),
              ("rsqrt", "aten.rsqrt.default", True), ("log1p", "aten.log1p.default", False),
              ("reciprocal", "aten.reciprocal.default", True)]
BINARY = ["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.maximum.default",
          "aten.minimum.default"]
COMPARE = ["lt", "gt", "le", "ge", "eq", "ne"]


def power(m, n):
    try:
        return m ** n
    except OverflowError:
        return math.inf


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.lines, self.inputs, self.syms = [], [], []
        self.hints = {}
        self.vals = []  # tensors available as operands
        self.by_name = {}
        self.n = 0
        nsym = rng.randint(1, 3)
        for i, h in enumerate(rng.sample([2, 3, 5, 6, 7, 9], nsym)):
            name = f"s{i}"
            lo = rng.choice([1, 1, 2])
            self.syms.append(f"  sym {name} : hint={h}, range=[{lo}, inf]")
            self.hints[name] = h
        self.m = Meta(self.hints)
        # One float dtype per graph: mixing precisions (an f32 chain promoted to an f64 output)
        # would be compared at the wider dtype's tolerance.
        self.fdt = rng.choices(["f32", "f64", "bf16"], [7, 2, 2])[0]
        self.bound = set()  # symbols bound by input sizes

    def fresh(self, prefix="v"):
        self.n += 1
        return f"{prefix}{self.n}"

    def rand_dim(self, bound_only=False):
        syms = sorted(self.bound if bound_only else self.hints)
        r = self.r.random()
        if r < 0.45 and syms:
            return Poly.sym(self.r.choice(syms))
        if r < 0.6:
            return ONE
        return Poly.const(self.r.choice([2, 3, 4, 8]))

    def new_input(self, sizes=None, dtype=None):
        if sizes is None:
            sizes = [self.rand_dim() for _ in range(self.r.randint(1, 3))]
        if dtype is None:
            dtype = self.r.choices([self.fdt, "i64", "bool"], [12, 2, 1])[0]
        for s in sizes:
            if s.as_int() is None and len(s.terms) == 1:
                (m, c), = s.terms.items()
                if c == 1 and len(m) == 1:
                    self.bound.add(m[0])
        t = T(f"x{len(self.inputs)}", dtype, sizes)
        t.mag = 8.0 if dtype == "i64" else 1.0
        # A third of the inputs donated (the graphs never write an input): the memory plan then
        # reuses their memory, outputs included, and --check runs on copies of them.
        donated = " donated" if self.r.random() < 0.3 else ""
        self.inputs.append(f"  %{t.name} = input{donated} : {t.type_str()}")
        self.vals.append(t)
        self.by_name[t.name] = t
        return t

    def emit(self, op, args, out, mag=None):
        self.lines.append(f"  %{out.name} = {op}({', '.join(args)}) : {out.type_str()}")
        self.vals.append(out)
        self.by_name[out.name] = out
        ts = [self.by_name[n] for n in re.findall(r"%(\w+)", " ".join(args))]  # the tensor operands
        out.mag = mag if mag is not None else self.magnitude(op, args, ts, out)
        out.cancels = (op in CANCELLING and is_float(out.dtype)) or any(t.cancels for t in ts)
        out.sources = out.sources.union(*(t.sources for t in ts))
        out.ratio = any(t.ratio for t in ts) or (op == "aten.div.Tensor" and len(ts) == 2
                                                  and ts[0].sizes == ts[1].sizes
                                                  and bool(ts[0].sources & ts[1].sources))
        return out

    def magnitude(self, op, args, ts, out):
        """A bound on |element| of op's result, given its operands' bounds (inputs are in [-1, 1),
        ints in [-8, 8)); inf where none is cheap to give (a division by a tensor). `ts`: the
        tensor operands."""
        nums = [abs(float(a)) for a in args if re.fullmatch(r"-?[0-9.]+", a)]
        m = [t.mag for t in ts] + nums
        if out.dtype == "bool" or op in BOUNDED_BY_ONE or op.startswith("aten.") and op.split(".")[1] in COMPARE:
            return 1.0
        if out.base is not None or op == "aten._to_copy.default":
            return ts[0].mag
        if op in ("aten.exp.default", "aten.expm1.default"):
            return math.exp(min(m[0], 700.0))
        if op == "aten.sqrt.default":
            return math.sqrt(m[0])
        if op in ("aten.log.default", "aten.log1p.default"):
            return math.log1p(m[0])
        if op == "aten.floor.default":
            return m[0] + 1
        if op in ("aten.add.Tensor", "aten.sub.Tensor"):
            return sum(m)
        if op == "aten.mul.Tensor":
            return math.prod(m)
        if op == "aten.div.Tensor":
            return m[0] / nums[0] if nums else math.inf
        return max(m)  # abs, neg, relu, maximum, minimum, where, cat, amax, amin, mean

    # -- pointwise ------------------------------------------------------------------------------

    def pw(self, op, tensors, numbers, dtype, args):
        shape = tensors[0].sizes
        for t in tensors[1:]:
            shape = broadcast(shape, t.sizes)
        strides = self.m.elementwise_strides(shape, tensors, bool(numbers))
        return self.emit(op, args, T(self.fresh(), dtype, shape, strides))

    def unary(self, x):
        r = self.r
        if x.dtype == "bool":
            return self.pw("aten.logical_not.default", [x], [], "bool", [f"%{x.name}"])
        if x.dtype == "i64":
            op = r.choice(["aten.neg.default", "aten.abs.default"])
            return self.pw(op, [x], [], "i64", [f"%{x.name}"])
        if r.random() < 0.3:
            _, op, plus1 = r.choice(SAFE_FLOAT)
            a = self.pw("aten.abs.default", [x], [], x.dtype, [f"%{x.name}"])
            if plus1:
                a = self.pw("aten.add.Tensor", [a], ["float"], a.dtype, [f"%{a.name}", "1.0"])
            return self.pw(op, [a], [], a.dtype, [f"%{a.name}"])
        _, op = r.choice([u for u in UNARY_FLOAT if x.mag <= ILL_CONDITIONED.get(u[1], math.inf)
                          and not (x.cancels and u[1] in DISCONTINUOUS)])
        return self.pw(op, [x], [], x.dtype, [f"%{x.name}"])

    def partner(self, x):
        """Another tensor broadcastable with x: an existing one, or a new input."""
        r = self.r
        cands = [t for t in self.vals if t is not x and broadcast(x.sizes, t.sizes) is not None
                 and (broadcast(x.sizes, t.sizes) == x.sizes or r.random() < 0.3)]
        if cands and (len(self.inputs) >= 4 or r.random() < 0.6):
            return r.choice(cands)
        if len(self.inputs) >= 4:
            return None
        sizes = [s if r.random() < 0.6 else ONE for s in x.sizes]
        if sizes and r.random() < 0.25:
            sizes = sizes[r.randint(1, len(sizes)):]  # fewer leading dims
        if r.random() < 0.15 and x.rank < 3:
            sizes = [self.rand_dim()] + list(x.sizes)  # broadcast x up
        dt = x.dtype if r.random() < 0.7 else r.choice([self.fdt, "i64"])
        return self.new_input(sizes, dt)

    def binary(self, x):
        r = self.r
        if x.dtype == "bool":
            x = self.to_float(x)
        y = self.partner(x) if r.random() < 0.75 else None
        if y is not None and y.dtype == "bool":
            y = self.to_float(y)
        if y is None:  # a scalar operand
            num = r.choice(["2.5", "-0.5", "3", "1.0"])
            kind = "float" if "." in num else "int"
            op = r.choice(["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor"]
                          + (["aten.div.Tensor"] if is_float(x.dtype) else []))
            if op == "aten.div.Tensor" and num == "-0.5":
                num = "4.0"
            dt = promote([x], [kind])
            return self.pw(op, [x], [kind], dt, [f"%{x.name}", num])
        dt = promote([x, y])
        ops = list(BINARY)
        if is_float(dt):
            ops.append("aten.div.Tensor")
        op = r.choice(ops)
        a, b = (x, y) if r.random() < 0.7 else (y, x)
        if op == "aten.div.Tensor" and b.cancels:  # 0 in the reference, 1e-8 compiled: 1e8 apart
            op = "aten.mul.Tensor"
        if op == "aten.sub.Tensor" and dt == "bool":
            op = "aten.add.Tensor"
        return self.pw(op, [a, b], [], dt, [f"%{a.name}", f"%{b.name}"])

    def where(self, x):
        r = self.r
        if x.dtype == "bool":
            x = self.to_float(x)
        # Compare with a graph input or a number only: comparing two values that are equal in
        # exact arithmetic (x and mean(expand(x))) flips on rounding differences.
        y = self.partner(x)
        if y is not None and not y.name.startswith("x"):
            y = None
        cmp = r.choice(COMPARE)
        if y is None or y.dtype == "bool":
            # A float sum, mean or var of a few discrete values (0s and 1s from floor and sqrt) is
            # a fraction with a small denominator, which 0.25 can equal exactly: the reference
            # then gets 0.25 and a vectorized order 0.24999997. 0.2371 is no such fraction.
            bound = "0.2371" if x.cancels else "0.25"
            c = self.pw(f"aten.{cmp}.Scalar", [x], ["float"], "bool", [f"%{x.name}", bound])
            y = None
        else:
            c = self.pw(f"aten.{cmp}.Tensor", [x, y], [], "bool", [f"%{x.name}", f"%{y.name}"])
        other = y if y is not None and r.random() < 0.5 else self.unary(x)
        dt = promote([x, other])
        a, b = (x, other) if r.random() < 0.5 else (other, x)
        return self.pw("aten.where.self", [c, a, b], [], dt, [f"%{c.name}", f"%{a.name}", f"%{b.name}"])

    def to_float(self, x):
        """x (bool or int) as the graph's float dtype: a cast, or x * 1.0 where a cast can't be used."""
        return self.cast(x, self.fdt)

    def cast(self, x, dt=None):
        if dt is None:
            dt = self.r.choice([d for d in (self.fdt, "i64", "bool") if d != x.dtype])
        return self.emit("aten._to_copy.default", [f"%{x.name}", f"dtype={TORCH_DTYPE[dt]}"],
                         T(self.fresh(), dt, x.sizes, self.m.preserve(x.sizes, x.strides)))

    # -- reductions -----------------------------------------------------------------------------

    def reduce(self, x):
        r = self.r
        if x.rank == 0:
            return self.unary(x)
        kinds = ["sum", "amax", "amin", "argmax", "prod", "any"]
        if x.ratio:
            kinds.remove("argmax")
        if is_float(x.dtype):
            kinds += ["sum", "mean", "var", "softmax"]
        if x.dtype == "bool":
            kinds = ["sum", "any"]
        k = r.choice(kinds)
        keep = r.random() < 0.4
        if k == "softmax":
            return self.softmax(x)
        nd = r.randint(1, x.rank)
        dims = sorted(r.sample(range(x.rank), nd))
        if k in ("argmax", "prod"):
            dims = dims[:1]
        if x.rank >= 2 and r.random() < 0.3:
            pdims = [d - x.rank for d in dims]  # negative dims
        else:
            pdims = dims
        sizes = []
        for i, s in enumerate(x.sizes):
            if i in dims:
                if keep:
                    sizes.append(ONE)
            else:
                sizes.append(s)
        dl = "[" + ", ".join(map(str, pdims)) + "]"
        kd = "true" if keep else "false"
        a = f"%{x.name}"
        if k == "sum":
            dt = x.dtype if is_float(x.dtype) else "i64"
            args, op = [a, dl, kd], "aten.sum.dim_IntList"
        elif k in ("amax", "amin"):
            dt, args, op = x.dtype, [a, dl, kd], f"aten.{k}.default"
        elif k == "mean":
            dt, args, op = x.dtype, [a, dl, kd], "aten.mean.dim"
        elif k == "var":
            dt, op = x.dtype, "aten.var.correction"
            args = [a, dl, f"correction={r.choice([0, 1])}", f"keepdim={kd}"]
        elif k == "argmax":
            dt, args, op = "i64", [a, str(pdims[0]), kd], "aten.argmax.default"
        elif k == "prod":
            dt = x.dtype if is_float(x.dtype) else "i64"
            args, op = [a, str(pdims[0]), kd], "aten.prod.dim_int"
        else:
            dt, args, op = "bool", [a, dl, kd], "aten.any.dims"
        count = math.prod(self.m.v(x.sizes[d]) for d in dims)
        mag = {"sum": x.mag * count, "var": 8 * power(x.mag, 2), "prod": power(max(x.mag, 1.0), count),
               "argmax": float(count), "any": 1.0}.get(k, x.mag)
        return self.emit(op, args, T(self.fresh(), dt, sizes), mag)

    def softmax(self, x):
        r = self.r
        if x.dtype not in FLOATS:
            x = self.to_float(x)
        d = r.randrange(x.rank)
        red = [ONE if i == d else s for i, s in enumerate(x.sizes)]
        a = f"%{x.name}"
        mx = self.emit("aten.amax.default", [a, f"[{d}]", "true"], T(self.fresh(), x.dtype, red))
        sub = self.pw("aten.sub.Tensor", [x, mx], [], x.dtype, [a, f"%{mx.name}"])
        e = self.pw("aten.exp.default", [sub], [], x.dtype, [f"%{sub.name}"])
        s = self.emit("aten.sum.dim_IntList", [f"%{e.name}", f"[{d}]", "true"], T(self.fresh(), x.dtype, red))
        out = self.pw("aten.div.Tensor", [e, s], [], x.dtype, [f"%{e.name}", f"%{s.name}"])
        out.mag = 1.0
        return out

    # -- views ----------------------------------------------------------------------------------

    def view_op(self, x):
        r = self.r
        kinds = ["permute", "transpose", "unsqueeze", "slice", "select", "expand", "squeeze", "reshape"]
        for _ in range(8):
            k = r.choice(kinds)
            out = getattr(self, "v_" + k)(x)
            if out is not None:
                return out
        return self.unary(x)

    def view(self, x, op, args, sizes, strides, offset):
        return self.emit(op, args, T(self.fresh(), x.dtype, sizes, strides, offset, x.root))

    def v_permute(self, x):
        if x.rank < 2:
            return None
        p = list(range(x.rank))
        while p == list(range(x.rank)):
            self.r.shuffle(p)
        return self.view(x, "aten.permute.default", [f"%{x.name}", "[" + ", ".join(map(str, p)) + "]"],
                         [x.sizes[i] for i in p], [x.strides[i] for i in p], x.offset)

    def v_transpose(self, x):
        if x.rank < 2:
            return None
        a, b = self.r.sample(range(x.rank), 2)
        s, st = list(x.sizes), list(x.strides)
        s[a], s[b] = s[b], s[a]
        st[a], st[b] = st[b], st[a]
        return self.view(x, "aten.transpose.int", [f"%{x.name}", str(a), str(b - x.rank if self.r.random() < 0.3 else b)],
                         s, st, x.offset)

    def v_unsqueeze(self, x):
        if x.rank >= 3:
            return None
        d = self.r.randint(0, x.rank)
        st = ONE if d >= x.rank else x.sizes[d] * x.strides[d]
        return self.view(x, "aten.unsqueeze.default", [f"%{x.name}", str(d)],
                         x.sizes[:d] + [ONE] + x.sizes[d:], x.strides[:d] + [st] + x.strides[d:], x.offset)

    def v_squeeze(self, x):
        ones = [i for i, s in enumerate(x.sizes) if s == ONE]
        if not ones or x.rank < 2:
            return None
        ds = sorted(self.r.sample(ones, self.r.randint(1, len(ones))))
        if len(ds) == x.rank:
            ds = ds[:-1]
        keep = [i for i in range(x.rank) if i not in ds]
        return self.view(x, "aten.squeeze.dims", [f"%{x.name}", "[" + ", ".join(map(str, ds)) + "]"],
                         [x.sizes[i] for i in keep], [x.strides[i] for i in keep], x.offset)

    def v_slice(self, x):
        r = self.r
        ds = [i for i, s in enumerate(x.sizes) if s.as_int() is not None and s.as_int() >= 2]
        if not ds:
            return None
        d = r.choice(ds)
        n = x.sizes[d].as_int()
        start = r.randrange(n)
        end = r.randint(start + 1, n)
        step = r.choice([1, 1, 2])
        size = (end - start + step - 1) // step
        s, st = list(x.sizes), list(x.strides)
        s[d] = Poly.const(size)
        st[d] = x.strides[d] * step
        args = [f"%{x.name}", str(d), str(start), str(end)] + ([str(step)] if step != 1 else [])
        return self.view(x, "aten.slice.Tensor", args, s, st, x.offset + x.strides[d] * start)

    def v_select(self, x):
        if x.rank < 2:
            return None
        d = self.r.randrange(x.rank)
        n = x.sizes[d].as_int()
        idx = self.r.randrange(n) if n is not None else 0
        return self.view(x, "aten.select.int", [f"%{x.name}", str(d), str(idx)],
                         x.sizes[:d] + x.sizes[d + 1:], x.strides[:d] + x.strides[d + 1:],
                         x.offset + x.strides[d] * idx)

    def v_expand(self, x):
        r = self.r
        ones = [i for i, s in enumerate(x.sizes) if s == ONE]
        lead = 1 if x.rank < 3 and r.random() < 0.4 else 0
        if not ones and not lead:
            return None
        s = [self.rand_dim(True) for _ in range(lead)] + list(x.sizes)
        st = [ZERO] * lead + list(x.strides)
        for i in ones:
            if r.random() < 0.7:
                s[lead + i] = self.rand_dim(True)
                st[lead + i] = ZERO if s[lead + i] != ONE else x.strides[i]
        args_sizes = [str(v) if (i < lead or v != x.sizes[i - lead] or r.random() < 0.5) else "-1"
                      for i, v in enumerate(s)]
        return self.view(x, "aten.expand.default", [f"%{x.name}", "[" + ", ".join(args_sizes) + "]"], s, st, x.offset)

    def v_reshape(self, x):
        r = self.r
        if x.strides != contiguous_strides(x.sizes) or x.rank == 0:
            return None
        choice = r.random()
        if x.rank >= 2 and choice < 0.5:
            i = r.randrange(x.rank - 1)
            s = x.sizes[:i] + [x.sizes[i] * x.sizes[i + 1]] + x.sizes[i + 2:]
        elif choice < 0.75:
            ds = [i for i, v in enumerate(x.sizes) if v.as_int() in (4, 8)]
            if not ds or x.rank >= 3:
                return None
            i = r.choice(ds)
            s = x.sizes[:i] + [Poly.const(2), Poly.const(x.sizes[i].as_int() // 2)] + x.sizes[i + 1:]
        else:
            tot = ONE
            for v in x.sizes:
                tot = tot * v
            s = [tot]
        op = r.choice(["aten.view.default", "aten.reshape.default"])
        return self.view(x, op, [f"%{x.name}", "[" + ", ".join(map(str, s)) + "]"], s, None, x.offset)

    def cat(self, x):
        r = self.r
        if x.rank == 0:
            return self.unary(x)
        d = r.randrange(x.rank)
        same = [t for t in self.vals if t.rank == x.rank and t.dtype != "bool" and all(
            i == d or t.sizes[i] == x.sizes[i] for i in range(x.rank))]
        y = r.choice(same) if same and r.random() < 0.7 else self.unary(x)
        parts = [x, y] if r.random() < 0.5 else [y, x]
        if r.random() < 0.2:
            parts.append(x)
        sizes = list(x.sizes)
        tot = ZERO
        for p in parts:
            tot = tot + p.sizes[d]
        sizes[d] = tot
        dt = promote(parts)
        return self.emit("aten.cat.default", ["[" + ", ".join("%" + p.name for p in parts) + "]", str(d)],
                         T(self.fresh(), dt, sizes))

    # -- convolution ----------------------------------------------------------------------------

    def conv(self, x):
        """A 1-d convolution of a float [n, c, l] value (stride 1, padding that keeps l, dilation
        1 or 2, two groups where c is an even constant, maybe a bias), then maybe its backward
        with a random output_mask (only of a value with a finite bound): the library calls
        (oneDNN for f32) on strided operands and symbolic sizes."""
        r = self.r
        if x.rank != 3 or x.dtype != self.fdt:
            return self.unary(x)
        n, c, length = x.sizes
        k, dil = r.choice([1, 3, 5]), r.choice([1, 1, 2])
        pad = dil * (k - 1) // 2
        cc = c.as_int()
        groups = 2 if cc is not None and cc % 2 == 0 and r.random() < 0.4 else 1
        cout = groups * r.choice([1, 2, 3])
        cin = Poly.const(cc // groups) if groups > 1 else c
        w = self.new_input([Poly.const(cout), cin, Poly.const(k)], dtype=self.fdt)
        b = self.new_input([Poly.const(cout)], dtype=self.fdt) if r.random() < 0.5 else None
        lists = ["[1]", f"[{pad}]", f"[{dil}]", "false", "[0]", str(groups)]
        terms = c.ev(self.hints) / groups * k
        y = self.emit("aten.convolution.default", [f"%{x.name}", f"%{w.name}", f"%{b.name}" if b else "None"] + lists,
                      T(self.fresh(), self.fdt, [n, Poly.const(cout), length]),
                      mag=x.mag * w.mag * terms + (b.mag if b else 0.0))
        # PyTorch's own kernels disagree on a non-finite input's weight gradient: oneDNN and cuDNN
        # skip the zero padding (a tap that meets only padding gets 0), the native kernel
        # multiplies by it (NaN), as oneDNN's gemm path does, which toroid's takes for small shapes.
        if r.random() < 0.5 or not math.isfinite(x.mag):
            return y
        g = y if r.random() < 0.5 else self.new_input(list(y.sizes), dtype=self.fdt)
        mask = [r.random() < 0.7 for _ in range(3)]
        if not any(mask):
            mask[r.randrange(3)] = True
        positions = n.ev(self.hints) * length.ev(self.hints)
        shapes = [(x.sizes, g.mag * w.mag * cout / groups * k), (w.sizes, g.mag * x.mag * positions),
                  ([Poly.const(cout)], g.mag * positions)]
        outs = [T(self.fresh(), self.fdt, sizes if m else [ZERO]) for (sizes, _), m in zip(shapes, mask)]
        args = [f"%{g.name}", f"%{x.name}", f"%{w.name}", f"[{cout}]" if mask[2] or r.random() < 0.5 else "None"]
        args += lists + ["[" + ", ".join("true" if m else "false" for m in mask) + "]"]
        self.lines.append(f"  {', '.join('%' + t.name for t in outs)} = aten.convolution_backward.default("
                          f"{', '.join(args)}) : {', '.join(t.type_str() for t in outs)}")
        for t, (_, mag), m in zip(outs, shapes, mask):
            t.mag, t.cancels = mag, True
            self.by_name[t.name] = t
            if m:
                self.vals.append(t)
        return outs[mask.index(True)]

    # -- attention ------------------------------------------------------------------------------

    def attention(self, x):
        """scaled_dot_product_attention with a float value of rank >= 2 as the query: keys of its
        own length or another, values of another last size, maybe a bool mask (from a comparison,
        broadcast over the batch dims), is_causal or a scale; the keys may be the query itself."""
        r = self.r
        if x.rank < 2 or x.rank > 4 or x.dtype != self.fdt:
            return self.unary(x)
        batch, length, e = x.sizes[:-2], x.sizes[-2], x.sizes[-1]
        keys = length if r.random() < 0.5 else Poly.const(r.choice([1, 3, 7, 33]))
        ev = Poly.const(r.choice([1, 4, 8]))
        k = x if keys == length and r.random() < 0.5 else self.new_input(batch + [keys, e], dtype=self.fdt)
        v = self.new_input(batch + [keys, ev], dtype=self.fdt)
        args = [f"%{x.name}", f"%{k.name}", f"%{v.name}"]
        kind = r.choice(["plain", "mask", "causal", "scale"])
        if kind == "mask":
            m = self.new_input([length, keys], dtype=self.fdt)
            mask = self.emit("aten.gt.Scalar", [f"%{m.name}", "0.0"], T(self.fresh(), "bool", [length, keys]))
            args.append(f"%{mask.name}")
        elif kind == "causal":
            args += ["None", "0.0", "true"]
        elif kind == "scale":
            args.append("scale=0.5")
        y = self.emit("aten.scaled_dot_product_attention.default", args, T(self.fresh(), self.fdt, batch + [length, ev]),
                      mag=v.mag)
        y.cancels = True  # a weighted mean of values
        return y

    # -- a graph --------------------------------------------------------------------------------

    def step(self, x):
        r = self.r
        k = r.choices(["unary", "binary", "where", "reduce", "view", "cast", "cat", "conv", "attention"],
                      [5, 6, 2, 4, 5, 1, 1, 1, 1])[0]
        if k == "attention":
            return self.attention(x)
        if k == "conv":
            return self.conv(x)
        if k == "unary":
            return self.unary(x)
        if k == "binary":
            return self.binary(x)
        if k == "where":
            return self.where(x)
        if k == "reduce":
            return self.reduce(x)
        if k == "view":
            return self.view_op(x)
        if k == "cast":
            return self.cast(x)
        return self.cat(x)

    def graph(self, name):
        r = self.r
        x = self.new_input(dtype=r.choices([self.fdt, "i64", "bool"], [14, 2, 1])[0])
        for _ in range(r.randint(2, 9)):
            if r.random() < 0.2:
                cands = [t for t in self.vals if t.rank > 0]
                if cands:
                    x = r.choice(cands)
            x = self.step(x)
        outs = [x]
        for _ in range(r.choices([0, 1, 2], [5, 3, 2])[0]):
            inter = [t for t in self.vals if t.name.startswith("v") and t not in outs]
            if not inter:
                break
            t = r.choice(inter)
            if r.random() < 0.4:
                t = self.view_op(t)
            if t not in outs:
                outs.append(t)
        if all(t.name.startswith("x") for t in outs):
            outs = [self.unary(outs[0])]
        body = [f"graph @{name} functional {{"] + self.syms + self.inputs + self.lines
        body.append("  output " + ", ".join("%" + t.name for t in outs))
        body.append("}")
        return "\n".join(body) + "\n"


def make_graph(seed, index):
    rng = random.Random(seed * 1000003 + index)
    return Gen(rng).graph(f"rand{index}")


# ---------------------------------------------------------------------------------------------
# The runner.


def run_one(args, index, tmp):
    text = make_graph(args.seed, index)
    d = args.keep or tmp
    path = os.path.join(d, f"rand{index}.tir")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    if args.device == "cuda-compile":  # NVRTC only: no GPU needed
        cmd = [args.toroidc, "run", path, "--device", "cuda", "--compile-only", "--verify-each"]
    else:
        cmd = [args.toroidc, "run", path, "--random-inputs", "--seed", str(index), "--check", "--json",
               "--verify-each", "--device", args.device]
    # Every run replays its memory plan (poisoned frees, live reads, the peak under the plan's).
    env = dict(os.environ, TOROID_VERIFY_LIFECYCLE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
        ok, out = p.returncode == 0, f"exit {p.returncode}\n{p.stdout}{p.stderr}"
        # bf16 values keep float precision between a kernel's ops, where the reference rounds each
        # op's result: a discontinuous op (a cast to bool, a comparison, floor) can then turn a
        # rounding difference into a different answer. Such a graph must match when compiled with
        # eager's rounding.
        if not ok and "differs from the reference" in p.stderr and "bf16[" in text:
            cmd.append("--emulate-precision-casts")
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
            ok, out = p.returncode == 0, f"exit {p.returncode} (with eager's bf16 rounding)\n{p.stdout}{p.stderr}"
        if ok and "--json" in cmd:
            why = memory_problem(p.stdout)
            ok, out = why is None, f"{why}\n{out}"
    except subprocess.TimeoutExpired:
        ok, out = False, f"timed out after {args.timeout} s"
    return index, ok, text, out, " ".join(cmd)


def memory_problem(stdout):
    """None when the run held at most what its plan estimated, and the plan at most what the
    reference interpreter holds (every value it computes, kept to the end); else why not."""
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if not lines:
        return "no JSON summary from toroidc"
    r = json.loads(lines[-1])
    if r["peak_bytes"] > r["planned_peak_bytes"]:
        return f"measured peak {r['peak_bytes']} > planned {r['planned_peak_bytes']}"
    if r["planned_peak_bytes"] > r["reference_peak_bytes"]:
        return f"planned peak {r['planned_peak_bytes']} > the reference interpreter's {r['reference_peak_bytes']}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", required=True, help="an integer, or 'random' (a fuzzing run; the seed is printed)")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--time-budget", type=float, default=0,
                    help="start no graph after this many seconds (a bounded fuzzing run)")
    ap.add_argument("--toroidc", required=True)
    ap.add_argument("--keep", help="write the graphs into this directory (kept)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", type=int, help="run only graph number ONLY")
    ap.add_argument("--print", action="store_true", help="print the graphs, run nothing")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--device", choices=["cpu", "cuda", "cuda-compile"], default="cpu",
                    help="run on the CPU or a GPU (--check against the reference either way), or only "
                         "compile the CUDA kernels with NVRTC (cuda-compile)")
    args = ap.parse_args()
    args.seed = int.from_bytes(os.urandom(4), "little") if args.seed == "random" else int(args.seed)
    print(f"seed {args.seed}", flush=True)
    indices = [args.only] if args.only is not None else list(range(args.count))
    if args.print:
        for i in indices:
            sys.stdout.write(make_graph(args.seed, i))
        return 0
    if args.device == "cuda" and not (os.path.exists("/dev/nvidia0") or os.path.exists("/dev/nvidiactl")):
        print("no GPU here: skipped")
        return 77  # ctest's SKIP_RETURN_CODE
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="toroid-rand-") as tmp:
        deadline = time.monotonic() + args.time_budget if args.time_budget > 0 else None
        jobs = max(1, args.jobs)
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            pending, next_graph = set(), iter(indices)
            while True:
                # Keep `jobs` graphs in flight until the indices or the time budget run out.
                while len(pending) < jobs and (deadline is None or time.monotonic() < deadline):
                    i = next(next_graph, None)
                    if i is None:
                        break
                    pending.add(pool.submit(run_one, args, i, tmp))
                if not pending:
                    break
                done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for f in done:
                    index, ok, text, out, cmd = f.result()
                    if ok:
                        passed += 1
                        continue
                    failed += 1
                    print(f"FAIL: graph {index} (seed {args.seed}; again: random_graphs.py --seed {args.seed} "
                          f"--count {index + 1} --only {index} --toroidc ...): {cmd}\n{text}{out.rstrip()}\n", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
