#!/usr/bin/env python3
"""Writes golden cases for toroid's reference interpreter, computed by real PyTorch.

Each case is a directory OUT/ops/<overload>/<case>/ with
  graph.tir   a one-op graph; input and result types are the real tensors' metas (dtype, sizes,
              strides, offset, and storage=%v where a result aliases an input or another result)
  in<i>.npy   the logical values of input i (C order; the .tir type says the layout to use)
  out<i>.npy  the expected results (0-dim arrays for scalar results)
  case.json   {"op", "rtol", "atol", "equal_nan", "check_strides", "nondeterministic"}
bfloat16 arrays are stored as '<u2' holding the raw bits (toroid's .npy convention).
Nondeterministic cases (empty, rand, randn, randperm) have no out*.npy worth comparing: the runner
checks only the result metas. complex64/complex128 arrays are NumPy's '<c8'/'<c16'.

Usage: python3 tools/golden/gen_golden.py --out-dir DIR [--ops SUBSTR,...]
Needs torch (2.11 for the committed set) and numpy. docs/toroidc.md describes the set.
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import torch

aten = torch.ops.aten
DT = {torch.bool: "bool", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
      torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
      torch.complex64: "c64", torch.complex128: "c128"}
F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
C64, C128 = torch.complex64, torch.complex128
I64, I32, I16, I8, U8, BOOL = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool
INF, NAN = math.inf, math.nan

# ------------------------------------------------------------------------------------------
# Inputs


class Rng:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def t(self, shape, dtype=F32, kind="normal"):
        shape = tuple(shape)
        if dtype.is_complex:
            real = F32 if dtype == C64 else F64
            return torch.complex(self.t(shape, real, kind), self.t(shape, real, kind))
        if dtype.is_floating_point:
            if kind == "pos":
                x = torch.rand(shape, generator=self.g, dtype=F64) * 3 + 0.05
            elif kind == "unit":
                x = torch.rand(shape, generator=self.g, dtype=F64) * 1.8 - 0.9
            elif kind == "ge1":
                x = torch.rand(shape, generator=self.g, dtype=F64) * 3 + 1.0
            else:
                x = torch.randn(shape, generator=self.g, dtype=F64) * 2
            return x.to(dtype)
        if dtype == BOOL:
            return torch.randint(0, 2, shape, generator=self.g).bool()
        if dtype == U8:
            return torch.randint(0, 20, shape, generator=self.g).to(U8)
        lo = 1 if kind in ("pos", "ge1") else -10
        x = torch.randint(lo, 10, shape, generator=self.g)
        if kind == "nonzero":
            x[x == 0] = 3
        return x.to(dtype)

    def perm(self, n):
        return torch.randperm(n, generator=self.g)


def tposed(x):
    """Same values, last two dims swapped in memory."""
    if x.dim() < 2:
        return x
    return x.transpose(-1, -2).contiguous().transpose(-1, -2)


def strided(x):
    """Same values, every other element of a larger buffer along the last dim, at offset 1."""
    shape = list(x.shape)
    base = torch.zeros(shape[:-1] + [shape[-1] * 2 + 1], dtype=x.dtype)
    y = base[..., 1::2]
    y.copy_(x)
    return y


def edge(dtype=F32):
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, -1e30, 3e38, INF, -INF, NAN]
    return torch.tensor(vals, dtype=F64).to(dtype)


def int_edge(dtype=I64):
    info = torch.iinfo(dtype)
    vals = [info.max, info.min, 0, 1, -1, info.max - 1, 7, -7] if info.min < 0 else [info.max, 0, 1, 128, 7, 200, 3, 255]
    return torch.tensor(vals, dtype=dtype)


# ------------------------------------------------------------------------------------------
# Writing cases


def contiguous_strides(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= max(s, 1)
    return list(reversed(out))


def fmt_float(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    r = repr(float(v))
    if "." not in r and "e" not in r:
        r += ".0"
    return r


class Names:
    def __init__(self):
        self.inputs = []  # tensors, in order of first appearance

    def name_of(self, t):
        for i, x in enumerate(self.inputs):
            if x is t:
                return "%in" + str(i)
        self.inputs.append(t)
        return "%in" + str(len(self.inputs) - 1)


def fmt_arg(a, names):
    if isinstance(a, torch.Tensor):
        return names.name_of(a)
    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        return fmt_float(a)
    if a is None:
        return "None"
    if isinstance(a, (torch.dtype, torch.memory_format, torch.layout)):
        return str(a)
    if isinstance(a, torch.device):
        return 'device("%s")' % a
    if isinstance(a, str):
        return json.dumps(a)
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(fmt_arg(x, names) for x in a) + "]"
    raise TypeError("cannot write argument %r" % (a,))


def storage_key(t):
    """Identity of t's storage: the StorageImpl (kept when resize_ reallocates the data), else its
    address, or for 0-size tensors (no address) its base tensor."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()  # torch < 2.0
    if hasattr(st, "_cdata"):
        return ("impl", st._cdata)
    p = st.data_ptr()
    if p != 0:
        return ("ptr", p)
    return ("base", id(t._base if t._base is not None else t))


def tensor_type(t, storage_name=None):
    sizes = list(t.shape)
    s = "%s[%s]" % (DT[t.dtype], ", ".join(str(x) for x in sizes))
    attrs = []
    if list(t.stride()) != contiguous_strides(sizes):
        attrs.append("strides=[%s]" % ", ".join(str(x) for x in t.stride()))
    if t.storage_offset() != 0:
        attrs.append("offset=%d" % t.storage_offset())
    if storage_name:
        attrs.append("storage=" + storage_name)
    return s + ("{" + ", ".join(attrs) + "}" if attrs else "")


def save_npy(path, t):
    if isinstance(t, torch.Tensor):
        t = t.detach().contiguous()
        if t.dtype == BF16:
            arr = t.view(torch.int16).numpy().view(np.uint16)
        else:
            arr = t.numpy()
    elif isinstance(t, bool):
        arr = np.array(t, dtype=np.bool_)
    elif isinstance(t, int):
        arr = np.array(t, dtype=np.int64)
    else:
        arr = np.array(t, dtype=np.float64)
    np.save(path, arr)  # (np.ascontiguousarray would turn 0-dim arrays into 1-dim ones)


def default_tol(dtype, loose):
    if dtype in (F64,):
        return (1e-7, 1e-7) if not loose else (1e-6, 1e-7)
    if dtype == F32:
        return (1.3e-5, 1e-5) if not loose else (1e-4, 1e-5)
    if dtype == F16:
        return (2e-3, 1e-5) if not loose else (5e-3, 1e-4)
    if dtype == BF16:
        return (1.6e-2, 1e-5) if not loose else (3e-2, 1e-4)
    if dtype == C64:
        return (1e-4, 1e-4)
    if dtype == C128:
        return (1e-10, 1e-10)
    return (0.0, 0.0)


class Writer:
    def __init__(self, out_dir, only):
        self.root = os.path.join(out_dir, "ops")
        self.only = only
        self.counts = {}
        self.skipped = {}
        self.total_bytes = 0

    def wanted(self, op):
        return not self.only or any(s in op for s in self.only)

    def case(self, op, name, args, kwargs=None, loose=False, nondet=False, tol=None, check_strides=True):
        if not self.wanted(op):
            return
        kwargs = kwargs or {}
        try:
            self._case(op, name, list(args), kwargs, loose, nondet, tol, check_strides)
        except Exception as e:  # torch rejects the call: not a case
            msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            self.skipped.setdefault(op, []).append([name, msg])

    def _case(self, op, name, args, kwargs, loose, nondet, tol, check_strides):
        _, opname, overload = op.split(".")
        fn = getattr(getattr(aten, opname), overload)
        names = Names()
        arg_text = [fmt_arg(a, names) for a in args] + ["%s=%s" % (k, fmt_arg(v, names)) for k, v in kwargs.items()]
        inputs = names.inputs
        saved = [x.detach().clone() for x in inputs]  # before in-place ops mutate them
        in_types = [tensor_type(x) for x in inputs]
        in_keys = [storage_key(x) for x in inputs]
        torch.manual_seed(0)
        out = fn(*args, **kwargs)
        results = list(out) if isinstance(out, (tuple, list)) else [out]
        if not results:
            raise ValueError("no results")
        types, seen = [], []
        for i, r in enumerate(results):
            if isinstance(r, torch.Tensor):
                if r.dtype not in DT:
                    raise ValueError("unsupported result dtype %s" % r.dtype)
                key = storage_key(r)
                alias = None
                if key is not None:
                    for j, k in enumerate(in_keys):
                        if k == key:
                            alias = "%%in%d" % j
                            break
                    if alias is None:
                        for j, k in seen:
                            if k == key:
                                alias = "%%out%d" % j
                                break
                types.append(tensor_type(r, alias))
                seen.append((i, key))
            elif isinstance(r, bool):
                types.append("bool")
            elif isinstance(r, int):
                known = opname.startswith("sym_")
                types.append("int{value=%d}" % r if known else "int")
            elif isinstance(r, float):
                types.append("float")
            else:
                raise ValueError("unsupported result %r" % type(r))
        for x in inputs:
            if x.dtype not in DT:
                raise ValueError("unsupported input dtype")
        mutating = any(a.alias_info is not None and a.alias_info.is_write for a in fn._schema.arguments)
        lines = ["graph @golden%s {" % ("" if mutating else " functional")]
        for i, ty in enumerate(in_types):
            lines.append("  %%in%d = input : %s" % (i, ty))
        res_names = ", ".join("%%out%d" % i for i in range(len(results)))
        lines.append("  %s = %s(%s) : %s" % (res_names, op, ", ".join(arg_text), ", ".join(types)))
        lines.append("  output " + res_names)
        lines.append("}")

        d = os.path.join(self.root, op, name)
        k = 2
        while os.path.exists(d):
            d = os.path.join(self.root, op, "%s_%d" % (name, k))
            k += 1
        os.makedirs(d)
        with open(os.path.join(d, "graph.tir"), "w") as f:
            f.write("\n".join(lines) + "\n")
        for i, x in enumerate(saved):
            save_npy(os.path.join(d, "in%d.npy" % i), x)
        out_dtype = None
        for i, r in enumerate(results):
            save_npy(os.path.join(d, "out%d.npy" % i), r)
            if isinstance(r, torch.Tensor) and out_dtype is None:
                out_dtype = r.dtype
        rtol, atol = tol if tol else default_tol(out_dtype if out_dtype is not None else F64, loose)
        meta = {"op": op, "rtol": rtol, "atol": atol, "equal_nan": True, "check_strides": check_strides,
                "nondeterministic": nondet}
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(meta, f)
        for fn_ in os.listdir(d):
            self.total_bytes += os.path.getsize(os.path.join(d, fn_))
        self.counts[op] = self.counts.get(op, 0) + 1


# ------------------------------------------------------------------------------------------
# Case generators, by family

UNARY = {
    # op: (input kind, loose tolerance)
    "exp": ("normal", False), "expm1": ("normal", False), "log": ("pos", False), "log1p": ("pos", False),
    "log2": ("pos", False), "log10": ("pos", False), "sqrt": ("pos", False), "rsqrt": ("pos", False),
    "sin": ("normal", False), "cos": ("normal", False), "tan": ("unit", False), "asin": ("unit", False),
    "acos": ("unit", False), "atan": ("normal", False), "sinh": ("normal", False), "cosh": ("normal", False),
    "tanh": ("normal", False), "asinh": ("normal", False), "acosh": ("ge1", False), "atanh": ("unit", False),
    "erf": ("normal", False), "sigmoid": ("normal", False), "reciprocal": ("normal", False),
    "abs": ("normal", False), "neg": ("normal", False), "floor": ("normal", False), "ceil": ("normal", False),
    "round": ("normal", False), "trunc": ("normal", False), "sign": ("normal", False), "relu": ("normal", False),
    "gelu": ("normal", True), "silu": ("normal", False), "elu": ("normal", False), "leaky_relu": ("normal", False),
    "hardtanh": ("normal", False), "bitwise_not": ("normal", False), "logical_not": ("normal", False),
    "isnan": ("normal", False), "isinf": ("normal", False),
}


def native_case(w, op, name, args, kwargs, loose):
    with torch.backends.mkldnn.flags(enabled=False):
        w.case(op, name, args, kwargs, loose=loose)


def gen_unary(w, r):
    for name, (kind, loose) in UNARY.items():
        op = "aten.%s.default" % name
        c = lambda cname, x, **kw: w.case(op, cname, [x], kw, loose=loose)
        if name == "gelu":
            # ATen's own gelu kernel is the oracle: on AVX512-FP16 hosts contiguous f32/f16 gelu
            # goes through oneDNN instead, which turns +inf into nan and overflows 3e38 to inf.
            c = lambda cname, x, **kw: native_case(w, op, cname, [x], kw, loose)
        c("f32", r.t([3, 4], F32, kind))
        c("f64", r.t([5], F64, kind))
        c("f16", r.t([2, 3], F16, kind))
        c("bf16", r.t([2, 3], BF16, kind))
        c("i64", r.t([6], I64, kind))
        c("i32", r.t([2, 3], I32, kind))
        c("u8", r.t([4], U8, kind))
        c("bool", r.t([5], BOOL))
        c("edge_f32", edge(F32))
        c("edge_f16", edge(F16))
        c("edge_i64", int_edge(I64))
        c("tposed", tposed(r.t([3, 4], F32, kind)))
        c("strided", strided(r.t([2, 3], F32, kind)))
        c("empty", r.t([0, 3], F32, kind))
        c("scalar", r.t([], F32, kind))
        c("size1", r.t([1, 4, 1], F32, kind))
        if name == "gelu":
            c("tanh", r.t([3, 4], F32), approximate="tanh")
    for name, extra in [("elu", [0.5, 2.0, 1.5]), ("leaky_relu", [0.2]), ("hardtanh", [-0.5, 0.5])]:
        w.case("aten.%s.default" % name, "args", [r.t([3, 4]), *extra])
    w.case("aten.relu_.default", "f32", [r.t([3, 4])])
    w.case("aten.relu_.default", "tposed", [tposed(r.t([3, 4]))])
    w.case("aten.clamp.default", "both", [r.t([3, 4]), -0.5, 0.5])
    w.case("aten.clamp.default", "min_only", [r.t([3, 4]), -0.5])
    w.case("aten.clamp.default", "max_only", [r.t([3, 4]), None, 0.3])
    w.case("aten.clamp.default", "i64", [r.t([6], I64), -2, 3])
    w.case("aten.clamp.default", "i64_float_bound", [r.t([6], I64), -2.5, 3.5])
    w.case("aten.clamp.default", "edge", [edge(), -1.0, 1.0])
    w.case("aten.clamp.default", "f16", [r.t([5], F16), -0.5, 0.5])
    w.case("aten.clamp.Tensor", "bcast", [r.t([3, 4]), r.t([4]) - 1, r.t([3, 1]) + 1])
    w.case("aten.clamp.Tensor", "min_only", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.clamp.Tensor", "mixed", [r.t([3, 4], I64), r.t([4], F32), None])


BINARY = ["add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "remainder.Tensor", "fmod.Tensor",
          "pow.Tensor_Tensor", "atan2.default", "maximum.default", "minimum.default", "bitwise_and.Tensor",
          "bitwise_or.Tensor", "bitwise_xor.Tensor", "logical_and.default", "logical_or.default",
          "logical_xor.default", "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor"]


def gen_binary(w, r):
    for b in BINARY:
        op = "aten." + b
        name = b.split(".")[0]
        ikind = "nonzero" if name in ("remainder", "fmod") else "normal"

        def other(shape, dtype):
            y = r.t(shape, dtype, ikind)
            if name == "pow" and not dtype.is_floating_point and dtype != BOOL:
                y = y.abs() % 4
            return y
        pk = "pos" if name == "pow" else "normal"
        c = lambda cname, *a, **kw: w.case(op, cname, list(a), kw, loose=name == "pow")
        c("f32", r.t([3, 4], F32, pk), other([3, 4], F32))
        c("bcast", r.t([3, 1], F32, pk), other([1, 4], F32))
        c("bcast3d", r.t([2, 3, 4], F32, pk), other([4], F32))
        c("zero_dim", r.t([3, 4], F32, pk), other([], F32))
        c("f64", r.t([5], F64, pk), other([5], F64))
        c("f16", r.t([2, 3], F16, pk), other([2, 3], F16))
        c("bf16", r.t([2, 3], BF16, pk), other([2, 3], BF16))
        c("i64", r.t([6], I64), other([6], I64))
        c("i32", r.t([2, 3], I32), other([2, 3], I32))
        c("u8", r.t([4], U8), other([4], U8))
        c("bool", r.t([5], BOOL), r.t([5], BOOL))
        c("i64_f32", r.t([4], I64), other([4], F32))
        c("f16_f32_zero_dim", r.t([4], F16, pk), other([], F32))
        c("i32_i64", r.t([4], I32), other([4], I64))
        c("bool_f32", r.t([4], BOOL), other([4], F32))
        c("tposed", tposed(r.t([3, 4], F32, pk)), strided(other([3, 4], F32)))
        c("empty", r.t([0, 4], F32, pk), other([1, 4], F32))
        c("edge", edge(), edge().flip(0))
        c("edge_f16", edge(F16), edge(F16).flip(0))
        if name in ("add", "sub", "mul"):
            c("overflow_i64", int_edge(I64), int_edge(I64).flip(0))
            c("overflow_i32", int_edge(I32), torch.full([8], 2, dtype=I32))
            c("overflow_u8", int_edge(U8), torch.full([8], 200, dtype=U8))
        if name in ("add", "sub"):
            c("alpha", r.t([3, 4]), r.t([3, 4]), alpha=2.5)
            c("alpha_int", r.t([4], I64), r.t([4], I64), alpha=3)
    w.case("aten.div.Tensor", "int_by_zero", [torch.tensor([1, -1, 0, 5]), torch.tensor([0, 0, 0, 2])])
    for mode in ["floor", "trunc"]:
        op = "aten.div.Tensor_mode"
        w.case(op, mode + "_f32", [r.t([3, 4]), r.t([3, 4])], {"rounding_mode": mode})
        w.case(op, mode + "_i64", [r.t([6], I64), r.t([6], I64, "nonzero")], {"rounding_mode": mode})
        w.case(op, mode + "_edge", [edge(), edge().flip(0)], {"rounding_mode": mode})
        w.case(op, mode + "_bf16", [r.t([4], BF16), r.t([4], BF16)], {"rounding_mode": mode})
    w.case("aten.div.Tensor_mode", "none_f32", [r.t([4]), r.t([4])], {"rounding_mode": None})
    scalars = {
        "add.Scalar": [2, 2.5, True], "sub.Scalar": [2, -1.5], "mul.Scalar": [3, 0.5, -0.0], "div.Scalar": [2, 0.0, 2.5],
        "remainder.Scalar": [3, -1.5], "fmod.Scalar": [3, -1.5], "pow.Tensor_Scalar": [2, 0.5, -1, 3, 0],
        "eq.Scalar": [0.0, 1, NAN], "ne.Scalar": [0.0, 1], "lt.Scalar": [0.5, 1], "le.Scalar": [0.5, -1],
        "gt.Scalar": [0.5, 1], "ge.Scalar": [0.5, 0], "bitwise_and.Scalar": [5, True], "bitwise_or.Scalar": [5, False],
        "bitwise_xor.Scalar": [5, True], "rsub.Scalar": [1, 2.5],
    }
    for b, vals in scalars.items():
        op = "aten." + b
        for v in vals:
            tag = fmt_float(v) if isinstance(v, float) else str(v).lower()
            tag = tag.replace("-", "m").replace(".", "p")
            kind = "pos" if b.startswith("pow") else "normal"
            w.case(op, "f32_" + tag, [r.t([3, 4], F32, kind), v])
            w.case(op, "i64_" + tag, [r.t([5], I64, "pos" if b.startswith("pow") else "normal"), v])
            w.case(op, "bf16_" + tag, [r.t([4], BF16, kind), v])
            w.case(op, "bool_" + tag, [r.t([4], BOOL), v])
        w.case(op, "tposed", [tposed(r.t([3, 4])), vals[0]])
        w.case(op, "edge", [edge(), vals[0]])
    for v in [2.0, 2, 0.5, -1.5]:
        tag = str(v).replace(".", "p").replace("-", "m")
        w.case("aten.pow.Scalar", "f32_" + tag, [v, r.t([3, 4])])
        w.case("aten.pow.Scalar", "i64_" + tag, [v, r.t([5], I64).abs() % 5])
    w.case("aten.div.Scalar_mode", "floor", [r.t([3, 4]), 0.7], {"rounding_mode": "floor"})
    w.case("aten.div.Scalar_mode", "trunc_i64", [r.t([5], I64), 3], {"rounding_mode": "trunc"})
    w.case("aten.div.Scalar_mode", "floor_i64", [r.t([5], I64), -3], {"rounding_mode": "floor"})
    # where / masked_fill
    w.case("aten.where.self", "f32", [r.t([3, 4], BOOL), r.t([3, 4]), r.t([3, 4])])
    w.case("aten.where.self", "bcast", [r.t([3, 1], BOOL), r.t([4]), r.t([3, 4])])
    w.case("aten.where.self", "promote", [r.t([4], BOOL), r.t([4], I64), r.t([4], F64)])
    w.case("aten.where.self", "zero_dim", [r.t([4], BOOL), r.t([4], F16), r.t([], F32)])
    w.case("aten.where.self", "tposed", [tposed(r.t([3, 4], BOOL)), tposed(r.t([3, 4])), r.t([3, 4])])
    w.case("aten.where.self", "empty", [r.t([0, 4], BOOL), r.t([4]), r.t([1, 4])])
    w.case("aten.masked_fill.Scalar", "f32", [r.t([3, 4]), r.t([3, 4], BOOL), -INF])
    w.case("aten.masked_fill.Scalar", "bcast", [r.t([3, 4]), r.t([4], BOOL), 2.5])
    w.case("aten.masked_fill.Scalar", "i64", [r.t([5], I64), r.t([5], BOOL), 7])
    # in-place and out=
    w.case("aten.add_.Tensor", "f32", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.add_.Tensor", "bcast_alpha", [r.t([3, 4]), r.t([4])], {"alpha": 2})
    w.case("aten.add_.Tensor", "tposed", [tposed(r.t([3, 4])), r.t([3, 4])])
    w.case("aten.add_.Tensor", "i64_overflow", [int_edge(I64), int_edge(I64)])
    w.case("aten.mul_.Tensor", "f32", [r.t([3, 4]), r.t([3, 1])])
    w.case("aten.mul_.Tensor", "f32_by_i64", [r.t([4]), r.t([4], I64)])
    w.case("aten.copy_.default", "same", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.copy_.default", "bcast_cast", [r.t([3, 4]), r.t([4], I64)])
    w.case("aten.copy_.default", "into_tposed", [tposed(r.t([3, 4])), r.t([3, 4])])
    w.case("aten.copy_.default", "to_bf16", [r.t([5], BF16), r.t([5], F64)])
    w.case("aten.exp.out", "f32", [r.t([3, 4])], {"out": r.t([3, 4])})
    w.case("aten.atan2.out", "f32", [r.t([3, 4]), r.t([3, 4])], {"out": r.t([3, 4])})
    w.case("aten.atan2.out", "bcast", [r.t([3, 1]), r.t([4])], {"out": r.t([3, 4])})


def gen_backward_pointwise(w, r):
    w.case("aten.tanh_backward.default", "f32", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.sigmoid_backward.default", "f32", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.threshold_backward.default", "f32", [r.t([3, 4]), r.t([3, 4]), 0.0])
    w.case("aten.threshold_backward.default", "thr", [r.t([3, 4]), r.t([3, 4]), 0.5])
    w.case("aten.gelu_backward.default", "f32", [r.t([3, 4]), r.t([3, 4])], loose=True)
    w.case("aten.gelu_backward.default", "tanh", [r.t([3, 4]), r.t([3, 4])], {"approximate": "tanh"}, loose=True)
    w.case("aten.silu_backward.default", "f32", [r.t([3, 4]), r.t([3, 4])])
    for op in ["aten._softmax_backward_data.default", "aten._log_softmax_backward_data.default"]:
        w.case(op, "f32", [r.t([3, 4]), r.t([3, 4]), 1, F32])
        w.case(op, "neg_dim", [r.t([2, 3, 4]), r.t([2, 3, 4]), -1, F32])


def gen_reductions(w, r):
    x3 = lambda dt=F32: r.t([2, 3, 4], dt)
    for op, extra_dt in [("aten.sum.dim_IntList", [I32, BOOL, F16, BF16]), ("aten.mean.dim", [F16, BF16])]:
        w.case(op, "dim1", [r.t([3, 4]), [1]])
        w.case(op, "neg_keepdim", [x3(), [-1], True])
        w.case(op, "two_dims", [x3(), [0, 2]])
        w.case(op, "all_dims_empty_list", [r.t([3, 4]), []])
        w.case(op, "none_dims", [r.t([3, 4]), None])
        w.case(op, "f64", [r.t([5, 3], F64), [0]])
        for dt in extra_dt:
            w.case(op, DT[dt], [r.t([3, 5], dt), [1]])
        w.case(op, "dtype_f64", [r.t([3, 4]), [0]], {"dtype": F64})
        w.case(op, "empty", [r.t([0, 3]), [0]])
        w.case(op, "tposed", [tposed(r.t([3, 4])), [1], True])
        w.case(op, "nan", [edge().view(3, 4), [1]])
        w.case(op, "size1", [r.t([1, 4, 1]), [0, 2]])
    w.case("aten.sum.dim_IntList", "i64_overflow", [int_edge(I64).view(2, 4), [1]])
    for op in ["aten.sum.default", "aten.mean.default"]:
        w.case(op, "f32", [r.t([3, 4])])
        w.case(op, "i64", [r.t([5], I64)])
        w.case(op, "bool", [r.t([5], BOOL)])
        w.case(op, "f16", [r.t([7], F16)])
        w.case(op, "empty", [r.t([0])])
        w.case(op, "scalar", [r.t([])])
        w.case(op, "dtype", [r.t([4], I32)], {"dtype": F64})
    for op in ["aten.amax.default", "aten.amin.default"]:
        w.case(op, "dim1", [r.t([3, 4]), [1]])
        w.case(op, "neg_keepdim", [x3(), [-1], True])
        w.case(op, "all", [r.t([3, 4])])
        w.case(op, "two_dims", [x3(), [0, 2]])
        w.case(op, "i64", [r.t([3, 4], I64), [0]])
        w.case(op, "bool", [r.t([3, 4], BOOL), [0]])
        w.case(op, "bf16", [r.t([3, 4], BF16), [1]])
        w.case(op, "nan", [edge().view(3, 4), [1]])
        w.case(op, "tposed", [tposed(r.t([3, 4])), [0]])
        w.case(op, "empty_other_dim", [r.t([0, 3]), [1]])
        w.case(op, "signed_zero", [torch.tensor([[0.0, -0.0], [-0.0, 0.0]]), [1]])
    ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, -1.0], [NAN, 1.0, NAN, 5.0]])
    for op in ["aten.argmax.default", "aten.argmin.default"]:
        w.case(op, "all", [r.t([3, 4])])
        w.case(op, "dim1", [r.t([3, 4]), 1])
        w.case(op, "neg_keepdim", [x3(), -1, True])
        w.case(op, "ties_nan", [ties, 1])
        w.case(op, "i64", [r.t([3, 4], I64), 0])
        w.case(op, "bool", [r.t([6], BOOL)])
        w.case(op, "tposed", [tposed(r.t([3, 4])), 0])
        w.case(op, "f16", [r.t([3, 4], F16), 1])
    for op, vals in [("aten.max.dim", None), ("aten.min.dim", None)]:
        w.case(op, "dim1", [r.t([3, 4]), 1])
        w.case(op, "neg_keepdim", [x3(), -1, True])
        w.case(op, "ties_nan", [ties, 1])
        w.case(op, "i64", [r.t([3, 4], I64), 0])
        w.case(op, "bool", [r.t([3, 4], BOOL), 1])
        w.case(op, "tposed", [tposed(r.t([3, 4])), 0])
        w.case(op, "bf16", [r.t([3, 4], BF16), 1])
    for op in ["aten.max.default", "aten.min.default"]:
        w.case(op, "f32", [r.t([3, 4])])
        w.case(op, "nan", [edge()])
        w.case(op, "i64", [int_edge(I64)])
        w.case(op, "bool", [r.t([4], BOOL)])
    w.case("aten.any.default", "bool", [r.t([3, 4], BOOL)])
    w.case("aten.any.default", "false", [torch.zeros(3, dtype=BOOL)])
    w.case("aten.any.default", "f32", [torch.tensor([0.0, -0.0, NAN])])
    w.case("aten.any.default", "empty", [torch.zeros(0, dtype=BOOL)])
    w.case("aten.any.default", "i64", [torch.tensor([0, 0, 3])])
    w.case("aten.any.dim", "dim1", [r.t([3, 4], BOOL), 1])
    w.case("aten.any.dim", "neg_keepdim", [r.t([2, 3, 4], BOOL), -1, True])
    w.case("aten.any.dim", "f32", [torch.tensor([[0.0, 1.0], [0.0, 0.0]]), 1])
    w.case("aten.any.dim", "u8", [r.t([3, 4], U8), 0])
    w.case("aten.any.dims", "two", [r.t([2, 3, 4], BOOL), [0, 2]])
    w.case("aten.any.dims", "keepdim", [r.t([2, 3, 4], BOOL), [1], True])
    w.case("aten.any.dims", "none", [r.t([2, 3], BOOL), None])
    w.case("aten.prod.default", "f32", [r.t([6]) * 0.5 + 1])
    w.case("aten.prod.default", "i64", [r.t([6], I64)])
    w.case("aten.prod.default", "overflow_i64", [torch.full([70], 3, dtype=I64)])
    w.case("aten.prod.default", "bool", [r.t([4], BOOL)])
    w.case("aten.prod.default", "empty", [r.t([0])])
    w.case("aten.prod.default", "dtype", [r.t([4], I32)], {"dtype": F64})
    w.case("aten.prod.dim_int", "dim1", [r.t([3, 4]), 1])
    w.case("aten.prod.dim_int", "neg_keepdim", [x3(), -1, True])
    w.case("aten.prod.dim_int", "i32", [r.t([3, 4], I32), 0])
    w.case("aten.prod.dim_int", "nan", [edge().view(3, 4), 1])
    for op in ["aten.var.correction", "aten.var_mean.correction"]:
        w.case(op, "dim1", [r.t([3, 4]), [1]], {"correction": 1})
        w.case(op, "all_c0", [r.t([3, 4]), None], {"correction": 0})
        w.case(op, "keepdim", [x3(), [0, 2]], {"correction": 1, "keepdim": True})
        w.case(op, "default_corr", [r.t([3, 4]), [-1]])
        w.case(op, "c2_f64", [r.t([4, 5], F64), [1]], {"correction": 2})
        w.case(op, "one_elem", [r.t([3, 1]), [1]])
        w.case(op, "f16", [r.t([3, 8], F16), [1]])
        w.case(op, "tposed", [tposed(r.t([3, 4])), [0]])
    w.case("aten.var.dim", "unbiased", [r.t([3, 4]), [1]])
    w.case("aten.var.dim", "biased_keepdim", [r.t([3, 4]), [1], False, True])
    w.case("aten.var.dim", "none", [r.t([3, 4]), None])
    w.case("aten.cumsum.default", "dim1", [r.t([3, 4]), 1])
    w.case("aten.cumsum.default", "neg", [x3(), -1])
    w.case("aten.cumsum.default", "i32", [r.t([3, 4], I32), 0])
    w.case("aten.cumsum.default", "bool", [r.t([6], BOOL), 0])
    w.case("aten.cumsum.default", "dtype", [r.t([3, 4]), 1], {"dtype": F64})
    w.case("aten.cumsum.default", "tposed", [tposed(r.t([3, 4])), 1])
    w.case("aten.cumsum.default", "empty", [r.t([0, 3]), 0])
    w.case("aten.cumsum.default", "scalar", [r.t([]), 0])
    w.case("aten.cumsum.default", "edge", [edge(), 0])
    for op in ["aten._softmax.default", "aten._log_softmax.default"]:
        w.case(op, "dim1", [r.t([3, 4]), 1, False])
        w.case(op, "neg", [x3(), -1, False])
        w.case(op, "dim0", [x3(), 0, False])
        w.case(op, "f64", [r.t([4, 5], F64), 1, False])
        w.case(op, "f16", [r.t([3, 5], F16), 1, False])
        w.case(op, "bf16", [r.t([3, 5], BF16), 1, False])
        w.case(op, "neg_inf", [torch.tensor([[0.0, -INF, 1.0], [-INF, -INF, 2.0]]), 1, False])
        w.case(op, "large", [torch.tensor([[1000.0, 1001.0, -1000.0]]), 1, False])
        w.case(op, "tposed", [tposed(r.t([3, 4])), 1, False])
        w.case(op, "empty", [r.t([0, 4]), 1, False])
        w.case(op, "scalar", [r.t([]), 0, False])
    for op in ["aten.softmax.int", "aten.log_softmax.int"]:
        w.case(op, "dim1", [r.t([3, 4]), 1])
        w.case(op, "dtype", [r.t([3, 4]), -1, F64])


def gen_views(w, r):
    x = lambda *s: r.t(list(s))
    for op in ["aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"]:
        w.case(op, "flat", [x(3, 4), [12]])
        w.case(op, "infer", [x(3, 4), [2, -1, 3]])
        w.case(op, "to_scalar", [x(1), []])
        w.case(op, "from_scalar", [x(), [1, 1]])
        if op != "aten._unsafe_view.default":  # whether a 0-size result shares storage is unobservable
            w.case(op, "empty", [x(0, 4), [4, 0, 2]])
        w.case(op, "i64", [r.t([2, 3], I64), [3, 2]])
        w.case(op, "tposed_split", [tposed(x(3, 4)), [2, 2, 3][:1] + [6]])
        w.case(op, "tposed", [tposed(x(3, 4)), [12]])
        w.case(op, "strided", [strided(x(2, 3)), [2, 3, 1]])
    w.case("aten.permute.default", "3d", [x(2, 3, 4), [2, 0, 1]])
    w.case("aten.permute.default", "neg", [x(2, 3, 4), [-1, 0, 1]])
    w.case("aten.permute.default", "tposed", [tposed(x(3, 4)), [1, 0]])
    w.case("aten.permute.default", "scalar", [x(), []])
    w.case("aten.expand.default", "basic", [x(3, 1), [3, 4]])
    w.case("aten.expand.default", "new_dims", [x(3), [2, 4, 3]])
    w.case("aten.expand.default", "minus1", [x(3, 1), [-1, 5]])
    w.case("aten.expand.default", "zero", [x(1, 3), [0, 3]])
    w.case("aten.expand.default", "scalar", [x(), [2, 2]])
    w.case("aten.expand.default", "tposed", [tposed(x(3, 1)), [3, 2]])
    w.case("aten.select.int", "dim1", [x(3, 4), 1, 2])
    w.case("aten.select.int", "neg", [x(2, 3, 4), -1, -1])
    w.case("aten.select.int", "tposed", [tposed(x(3, 4)), 0, 1])
    w.case("aten.select.int", "strided", [strided(x(2, 3)), 1, 2])
    w.case("aten.select.int", "1d", [x(5), 0, 3])
    S = "aten.slice.Tensor"
    w.case(S, "dim1", [x(3, 5), 1, 1, 3])
    w.case(S, "step", [x(6, 2), 0, None, None, 2])
    w.case(S, "neg", [x(3, 5), -1, -2, None])
    w.case(S, "clamped", [x(3, 5), 1, 2, 100])
    w.case(S, "max_end", [x(3, 5), 0, 1, 9223372036854775807])
    w.case(S, "empty", [x(3, 5), 1, 4, 2])
    w.case(S, "strided", [strided(x(2, 6)), 1, 1, 5, 3])
    w.case(S, "default", [x(3, 5)])
    w.case("aten.squeeze.dim", "one", [x(3, 1, 4), 1])
    w.case("aten.squeeze.dim", "noop", [x(3, 4), 0])
    w.case("aten.squeeze.dim", "neg", [x(3, 1), -1])
    w.case("aten.squeeze.dim", "scalar", [x(), 0])
    w.case("aten.squeeze.dims", "two", [x(1, 3, 1), [0, 2]])
    w.case("aten.squeeze.dims", "mixed", [x(1, 3, 1), [0, 1, -1]])
    w.case("aten.squeeze.default", "all", [x(1, 3, 1, 2)])
    w.case("aten.squeeze.default", "tposed", [tposed(x(3, 1))])
    w.case("aten.unsqueeze.default", "front", [x(3, 4), 0])
    w.case("aten.unsqueeze.default", "back", [x(3, 4), -1])
    w.case("aten.unsqueeze.default", "middle", [tposed(x(3, 4)), 1])
    w.case("aten.unsqueeze.default", "scalar", [x(), 0])
    w.case("aten.diagonal.default", "main", [x(3, 4)])
    w.case("aten.diagonal.default", "offset", [x(3, 4), 1])
    w.case("aten.diagonal.default", "neg_offset", [x(3, 4), -1])
    w.case("aten.diagonal.default", "3d", [x(2, 3, 4), 0, 0, 2])
    w.case("aten.diagonal.default", "neg_dims", [x(2, 3, 4), 1, -1, -2])
    w.case("aten.diagonal.default", "out_of_range_offset", [x(3, 4), 5])
    for op in ["aten.alias.default", "aten.detach.default"]:
        w.case(op, "f32", [x(3, 4)])
        w.case(op, "tposed", [tposed(x(3, 4))])
    w.case("aten.as_strided.default", "basic", [x(3, 4), [2, 2], [1, 2]])
    w.case("aten.as_strided.default", "offset", [x(3, 4), [3], [2], 1])
    w.case("aten.as_strided.default", "overlap", [x(6), [3, 3], [1, 1]])
    w.case("aten.split_with_sizes.default", "dim0", [x(3, 4), [1, 2]])
    w.case("aten.split_with_sizes.default", "neg", [x(3, 4), [2, 2], -1])
    w.case("aten.split_with_sizes.default", "zero_size", [x(3, 4), [0, 3]])
    w.case("aten.split.Tensor", "even", [x(4, 3), 2])
    w.case("aten.split.Tensor", "uneven", [x(3, 5), 2, 1])
    w.case("aten.unbind.int", "dim0", [x(3, 4)])
    w.case("aten.unbind.int", "neg", [x(3, 2), -1])
    w.case("aten.transpose.int", "basic", [x(3, 4), 0, 1])
    w.case("aten.transpose.int", "neg", [x(2, 3, 4), -1, 0])
    w.case("aten.transpose.int", "same", [x(3, 4), 1, 1])
    w.case("aten.t.default", "2d", [x(3, 4)])
    w.case("aten.t.default", "1d", [x(4)])


def gen_creation(w, r):
    w.case("aten.full.default", "f32", [[2, 3], 1.5])
    w.case("aten.full.default", "int", [[2, 3], 2])
    w.case("aten.full.default", "bool", [[2], True])
    w.case("aten.full.default", "dtype", [[2, 3], 1.5], {"dtype": F64})
    w.case("aten.full.default", "dtype_i32", [[4], 7], {"dtype": I32})
    w.case("aten.full.default", "empty", [[0, 3], 1.0])
    w.case("aten.full.default", "scalar", [[], -INF])
    w.case("aten.full.default", "bf16", [[3], 0.1], {"dtype": BF16})
    w.case("aten.full_like.default", "f32", [r.t([3, 4]), 2.0])
    w.case("aten.full_like.default", "i64", [r.t([3], I64), 7])
    w.case("aten.full_like.default", "dtype", [r.t([3, 4]), 1], {"dtype": I32})
    w.case("aten.full_like.default", "tposed", [tposed(r.t([3, 4])), 1.0])
    w.case("aten.full_like.default", "tposed_contig", [tposed(r.t([3, 4])), 1.0], {"memory_format": torch.contiguous_format})
    A = "aten.arange.start_step"
    w.case(A, "int", [0, 10, 2])
    w.case(A, "float", [0, 1, 0.25])
    w.case(A, "neg_step", [10, 0, -3])
    w.case(A, "dtype", [0, 5, 1], {"dtype": F64})
    w.case(A, "empty", [5, 5, 1])
    w.case(A, "float_start", [-1.5, 2.0, 0.5])
    w.case("aten.scalar_tensor.default", "float", [2.5])
    w.case("aten.scalar_tensor.default", "dtype", [3], {"dtype": I64})
    w.case("aten.scalar_tensor.default", "bool", [True], {"dtype": BOOL})
    w.case("aten.empty.memory_format", "f32", [[2, 3]], nondet=True)
    w.case("aten.empty.memory_format", "dtype", [[4]], {"dtype": I64}, nondet=True)
    w.case("aten.empty_strided.default", "strided", [[2, 3], [1, 2]], nondet=True)
    w.case("aten.zeros.default", "f32", [[2, 3]])
    w.case("aten.zeros.default", "dtype", [[4]], {"dtype": I32})
    w.case("aten.ones.default", "f32", [[2, 3]])
    w.case("aten.ones.default", "bool", [[3]], {"dtype": BOOL})
    w.case("aten.zeros_like.default", "f32", [r.t([3, 4])])
    w.case("aten.zeros_like.default", "tposed", [tposed(r.t([3, 4]))])
    w.case("aten.ones_like.default", "i64", [r.t([3], I64)])
    w.case("aten.ones_like.default", "dtype", [r.t([3, 4])], {"dtype": F16})
    w.case("aten.fill.Scalar", "f32", [r.t([3, 4]), 3.0])
    w.case("aten.fill.Scalar", "i64", [r.t([3], I64), 2])
    w.case("aten.fill.Scalar", "tposed", [tposed(r.t([3, 4])), -1.5])
    w.case("aten.fill.Scalar", "bool", [r.t([3], BOOL), 1])
    for op in ["aten.clone.default", "aten.lift_fresh_copy.default"]:
        w.case(op, "f32", [r.t([3, 4])])
        w.case(op, "tposed", [tposed(r.t([3, 4]))])
        w.case(op, "strided", [strided(r.t([2, 3]))])
        w.case(op, "bf16", [r.t([3], BF16)])
    w.case("aten.clone.default", "contig", [tposed(r.t([3, 4]))], {"memory_format": torch.contiguous_format})
    w.case("aten.clone.default", "channels_last", [r.t([1, 2, 3, 2])], {"memory_format": torch.channels_last})
    T = "aten._to_copy.default"
    w.case(T, "f16", [r.t([3, 4])], {"dtype": F16})
    w.case(T, "bf16", [r.t([3, 4])], {"dtype": BF16})
    w.case(T, "f32_to_i32", [r.t([6]) * 10], {"dtype": I32})
    w.case(T, "f32_to_u8", [torch.tensor([0.0, 1.7, 255.0, 100.5])], {"dtype": U8})
    w.case(T, "i64_to_i8_wrap", [torch.tensor([1, 127, 128, 255, -129, 300])], {"dtype": I8})
    w.case(T, "bool_to_f32", [r.t([4], BOOL)], {"dtype": F32})
    w.case(T, "f32_to_bool", [torch.tensor([0.0, -0.0, 0.5, NAN, -INF])], {"dtype": BOOL})
    w.case(T, "tposed", [tposed(r.t([3, 4]))], {"dtype": F64})
    w.case(T, "no_dtype", [r.t([3])])
    w.case(T, "edge_to_f16", [edge()], {"dtype": F16})
    w.case(T, "edge_to_bf16", [edge(F64)], {"dtype": BF16})
    w.case(T, "f64_to_f32_round", [torch.tensor([1.0 + 2 ** -30, 1e-46, 3.5e38], dtype=F64)], {"dtype": F32})
    w.case("aten.copy.default", "same", [r.t([3, 4]), r.t([3, 4])])
    w.case("aten.copy.default", "bcast_cast", [r.t([3, 4]), r.t([4], I64)])
    w.case("aten.copy.default", "tposed", [tposed(r.t([3, 4])), r.t([3, 4])])
    # Random ops: PyTorch's bits cannot be matched; cases check metas only (or degenerate p).
    w.case("aten.rand.default", "meta", [[2, 3]], nondet=True)
    w.case("aten.randn.default", "meta", [[4]], {"dtype": F64}, nondet=True)
    w.case("aten.randperm.default", "meta", [5], nondet=True)
    w.case("aten.native_dropout.default", "p0", [r.t([3, 4]), 0.0, True])
    w.case("aten.native_dropout.default", "eval", [r.t([3, 4]), 0.5, False])
    w.case("aten.native_dropout.default", "p1", [r.t([3, 4]), 1.0, True])
    w.case("aten.native_dropout.default", "meta", [r.t([3, 4]), 0.5, True], nondet=True)
    w.case("aten.bernoulli.p", "p0", [r.t([3, 4]), 0.0])
    w.case("aten.bernoulli.p", "p1", [r.t([3, 4]), 1.0])


def gen_indexing(w, r):
    x = r.t([4, 5])
    idx = torch.tensor([2, 0, 3, 0])
    w.case("aten.index_select.default", "dim0", [x, 0, idx])
    w.case("aten.index_select.default", "dim1_neg", [r.t([3, 5]), -1, torch.tensor([4, 1])])
    w.case("aten.index_select.default", "i32_index", [r.t([4], I64), 0, torch.tensor([3, 3], dtype=I32)])
    w.case("aten.index_select.default", "empty_index", [x, 0, torch.tensor([], dtype=I64)])
    w.case("aten.index_select.default", "tposed", [tposed(r.t([3, 4])), 1, torch.tensor([0, 2])])
    w.case("aten.index.Tensor", "one", [x, [idx]])
    w.case("aten.index.Tensor", "neg_idx", [x, [torch.tensor([-1, 1])]])
    w.case("aten.index.Tensor", "two", [x, [torch.tensor([0, 3]), torch.tensor([4, 1])]])
    w.case("aten.index.Tensor", "none_first", [x, [None, torch.tensor([1, 1, 0])]])
    w.case("aten.index.Tensor", "bool_mask", [x, [r.t([4], BOOL)]])
    w.case("aten.index.Tensor", "bcast", [x, [torch.tensor([[0], [2]]), torch.tensor([1, 3])]])
    w.case("aten.gather.default", "dim1", [r.t([3, 4]), 1, torch.tensor([[0, 3], [1, 1], [2, 0]])])
    w.case("aten.gather.default", "dim0", [r.t([3, 4]), 0, torch.tensor([[2, 0, 1, 1]])])
    w.case("aten.gather.default", "neg", [r.t([2, 3]), -1, torch.tensor([[2], [0]])])
    sidx = torch.tensor([[0, 1, 2], [2, 0, 1]])
    w.case("aten.scatter.src", "dim1", [r.t([2, 4]), 1, sidx, r.t([2, 3])])
    w.case("aten.scatter.src", "dim0", [r.t([3, 3]), 0, torch.tensor([[0, 1, 2]]), r.t([1, 3])])
    w.case("aten.scatter.value", "dim1", [r.t([2, 4]), 1, sidx, 2.5])
    w.case("aten.scatter.value", "i64", [r.t([2, 4], I64), 1, sidx, 7])
    w.case("aten.scatter_add.default", "dup", [r.t([3]), 0, torch.tensor([0, 0, 2, 0]), r.t([4])])
    w.case("aten.scatter_add.default", "2d", [r.t([2, 4]), 1, sidx, r.t([2, 3])])
    for red in ["sum", "prod", "mean", "amax", "amin"]:
        for incl in [True, False]:
            w.case("aten.scatter_reduce.two", "%s_%s" % (red, "self" if incl else "noself"),
                   [r.t([4]), 0, torch.tensor([0, 0, 2, 1, 0]), r.t([5]), red], {"include_self": incl})
    w.case("aten.index_put.default", "set", [r.t([5]), [torch.tensor([1, 3])], r.t([2])])
    w.case("aten.index_put.default", "accumulate_dup", [r.t([5]), [torch.tensor([1, 1, 3])], r.t([3]), True])
    w.case("aten.index_put.default", "bcast_value", [r.t([3, 4]), [torch.tensor([0, 2])], r.t([4])])
    w.case("aten.index_put.default", "two_idx", [r.t([3, 4]), [torch.tensor([0, 2]), torch.tensor([1, 3])], torch.tensor(9.0)])
    w.case("aten.index_put.default", "mask", [r.t([4]), [torch.tensor([True, False, True, False])], torch.tensor(0.0)])
    w.case("aten.masked_scatter.default", "basic", [r.t([2, 3]), r.t([2, 3], BOOL), r.t([6])])
    w.case("aten.masked_scatter.default", "bcast", [r.t([2, 3]), torch.tensor([True, False, True]), r.t([2, 3])])
    w.case("aten.embedding.default", "basic", [r.t([5, 3]), torch.tensor([[0, 4], [2, 2]])])
    w.case("aten.embedding.default", "padding_idx", [r.t([5, 3]), torch.tensor([1, 0, 1]), 1])
    w.case("aten.embedding_dense_backward.default", "basic",
           [r.t([3, 2]), torch.tensor([0, 2, 0]), 4, -1, False])
    w.case("aten.embedding_dense_backward.default", "padding",
           [r.t([3, 2]), torch.tensor([0, 2, 0]), 4, 0, False])
    w.case("aten.nonzero.default", "2d", [torch.tensor([[1.0, 0.0], [0.0, -2.0], [NAN, 0.0]])])
    w.case("aten.nonzero.default", "bool", [r.t([6], BOOL)])
    w.case("aten.nonzero.default", "none", [torch.zeros(3, 2)])
    w.case("aten.nonzero.default", "scalar", [torch.tensor(5)])
    w.case("aten.cat.default", "dim0", [[r.t([2, 3]), r.t([1, 3])]])
    w.case("aten.cat.default", "neg", [[r.t([2, 3]), r.t([2, 1])], -1])
    w.case("aten.cat.default", "promote", [[r.t([2], I64), r.t([3], F32)]])
    w.case("aten.cat.default", "legacy_empty", [[r.t([2, 3]), r.t([0])]])
    w.case("aten.cat.default", "tposed", [[tposed(r.t([3, 4])), tposed(r.t([3, 4]))], 0])
    w.case("aten.cat.default", "single", [[r.t([2, 3])], 1])
    w.case("aten.constant_pad_nd.default", "last", [r.t([2, 3]), [1, 2]])
    w.case("aten.constant_pad_nd.default", "two_dims", [r.t([2, 3]), [1, 0, 0, 2], 0.5])
    w.case("aten.constant_pad_nd.default", "negative", [r.t([2, 5]), [-1, -2]])
    w.case("aten.constant_pad_nd.default", "i64", [r.t([3], I64), [2, 1], 7])
    w.case("aten.flip.default", "both", [r.t([3, 4]), [0, -1]])
    w.case("aten.flip.default", "one", [tposed(r.t([3, 4])), [1]])
    w.case("aten.flip.default", "none", [r.t([3]), []])
    w.case("aten.repeat.default", "2d", [r.t([2, 3]), [2, 1]])
    w.case("aten.repeat.default", "new_dims", [r.t([3]), [2, 2]])
    w.case("aten.repeat.default", "zero", [r.t([2]), [0]])
    w.case("aten.select_scatter.default", "dim1", [r.t([3, 4]), r.t([3]), 1, 0])
    w.case("aten.select_scatter.default", "neg", [r.t([3, 4]), r.t([4]), 0, -1])
    w.case("aten.slice_scatter.default", "dim1", [r.t([3, 4]), r.t([3, 2]), 1, 0, 2])
    w.case("aten.slice_scatter.default", "step", [r.t([6, 2]), r.t([3, 2]), 0, None, None, 2])
    w.case("aten.sort.default", "last", [torch.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])])
    w.case("aten.sort.default", "desc_dim0", [torch.tensor([[3.0, 1.0], [0.0, 4.0], [2.0, -1.0]]), 0, True])
    w.case("aten.sort.default", "nan", [torch.tensor([2.0, NAN, -INF, 1.0, INF])])
    w.case("aten.sort.default", "i64", [torch.tensor([5, -3, 9, 0])])
    w.case("aten.topk.default", "k2", [torch.tensor([[3.0, 1.0, 2.0, 7.0], [0.0, -1.0, 5.0, 4.0]]), 2])
    w.case("aten.topk.default", "smallest", [torch.tensor([3.0, 1.0, 2.0, 7.0, -2.0]), 3, -1, False])
    w.case("aten.topk.default", "dim0", [torch.tensor([[3.0, 1.0], [0.0, 4.0], [2.0, -1.0]]), 1, 0])


def gen_linalg(w, r):
    w.case("aten.mm.default", "f32", [r.t([3, 4]), r.t([4, 5])])
    w.case("aten.mm.default", "f64", [r.t([2, 3], F64), r.t([3, 2], F64)])
    w.case("aten.mm.default", "tposed", [tposed(r.t([3, 4])), tposed(r.t([4, 2]))])
    w.case("aten.mm.default", "empty_k", [r.t([3, 0]), r.t([0, 2])])
    w.case("aten.mm.default", "i64", [r.t([2, 3], I64), r.t([3, 2], I64)])
    w.case("aten.mm.default", "bf16", [r.t([3, 8], BF16), r.t([8, 2], BF16)], loose=True)
    w.case("aten.bmm.default", "f32", [r.t([2, 3, 4]), r.t([2, 4, 5])])
    w.case("aten.bmm.default", "tposed", [tposed(r.t([2, 3, 4])), r.t([2, 4, 2])])
    w.case("aten.addmm.default", "bcast_bias", [r.t([5]), r.t([3, 4]), r.t([4, 5])])
    w.case("aten.addmm.default", "beta_alpha", [r.t([3, 5]), r.t([3, 4]), r.t([4, 5])], {"beta": 0.5, "alpha": 2.0})
    w.case("aten.addmm.default", "beta0_nan", [torch.full([3, 2], NAN), r.t([3, 4]), r.t([4, 2])], {"beta": 0})
    w.case("aten.baddbmm.default", "basic", [r.t([2, 3, 5]), r.t([2, 3, 4]), r.t([2, 4, 5])])
    w.case("aten.linear.default", "bias", [r.t([3, 4]), r.t([5, 4]), r.t([5])])
    w.case("aten.linear.default", "nobias", [r.t([2, 3, 4]), r.t([5, 4])])
    w.case("aten.matmul.default", "mv", [r.t([3, 4]), r.t([4])])
    w.case("aten.matmul.default", "batched", [r.t([2, 3, 4]), r.t([4, 2])])
    w.case("aten.matmul.default", "dot", [r.t([4]), r.t([4])])
    sdpa = "aten.scaled_dot_product_attention.default"
    w.case(sdpa, "f32", [r.t([2, 3, 5, 8]), r.t([2, 3, 7, 8]), r.t([2, 3, 7, 4])])
    w.case(sdpa, "causal_scale", [r.t([1, 2, 6, 4]), r.t([1, 2, 6, 4]), r.t([1, 2, 6, 4])],
           {"is_causal": True, "scale": 0.3})
    w.case(sdpa, "causal_wide", [r.t([1, 1, 3, 4]), r.t([1, 1, 5, 4]), r.t([1, 1, 5, 2])], {"is_causal": True})
    bool_mask = r.t([1, 1, 4, 6], BOOL)
    bool_mask[0, 0, 1] = False  # a row with every key masked: zeros
    w.case(sdpa, "bool_mask", [r.t([2, 2, 4, 8]), r.t([2, 2, 6, 8]), r.t([2, 2, 6, 8]), bool_mask])
    w.case(sdpa, "float_mask", [r.t([2, 4, 3]), r.t([2, 5, 3]), r.t([2, 5, 3]), r.t([4, 5])])
    w.case(sdpa, "gqa", [r.t([1, 4, 3, 8]), r.t([1, 2, 5, 8]), r.t([1, 2, 5, 8])], {"enable_gqa": True})
    w.case(sdpa, "bcast_batch", [r.t([2, 3, 4, 8]), r.t([1, 3, 6, 8]), r.t([1, 3, 6, 8])])
    # An output is a weighted mean of values of size ~1 and can cancel to near 0: eager's bf16
    # rounding inside the kernel bounds its error by bf16's step at the values' scale, not the
    # output's (an element of 0.012 was 0.0104 against the float64 reference).
    w.case(sdpa, "bf16", [r.t([1, 2, 5, 16], BF16), r.t([1, 2, 9, 16], BF16), r.t([1, 2, 9, 16], BF16)],
           tol=(0.03, 0.008))
    w.case(sdpa, "f64", [r.t([1, 2, 3, 4], F64), r.t([1, 2, 3, 4], F64), r.t([1, 2, 3, 4], F64)])
    w.case(sdpa, "empty_keys", [r.t([1, 2, 3, 4]), r.t([1, 2, 0, 4]), r.t([1, 2, 0, 4])])


def gen_norm_conv_pool(w, r):
    w.case("aten.native_layer_norm.default", "affine", [r.t([3, 4]), [4], r.t([4]), r.t([4]), 1e-5])
    w.case("aten.native_layer_norm.default", "no_affine", [r.t([2, 3, 4]), [3, 4], None, None, 1e-5])
    w.case("aten.native_layer_norm.default", "f64", [r.t([2, 5], F64), [5], None, None, 1e-6])
    w.case("aten.layer_norm.default", "affine", [r.t([3, 4]), [4], r.t([4]), r.t([4])])
    w.case("aten.native_layer_norm_backward.default", "affine",
           [r.t([3, 4]), r.t([3, 4]), [4], r.t([3, 1]), r.t([3, 1], F32, "pos"), r.t([4]), r.t([4]), [True, True, True]],
           loose=True)
    w.case("aten.native_group_norm.default", "basic", [r.t([2, 4, 3]), r.t([4]), r.t([4]), 2, 4, 3, 2, 1e-5])
    w.case("aten.native_group_norm.default", "no_affine", [r.t([2, 6, 2, 2]), None, None, 2, 6, 4, 3, 1e-5])
    w.case("aten.native_group_norm_backward.default", "basic",
           [r.t([2, 4, 3]), r.t([2, 4, 3]), r.t([2, 2]), r.t([2, 2], F32, "pos"), r.t([4]), 2, 4, 3, 2, [True, True, True]],
           loose=True)
    w.case("aten._native_batch_norm_legit_no_training.default", "basic",
           [r.t([2, 3, 4]), r.t([3]), r.t([3]), r.t([3]), r.t([3], F32, "pos"), 0.1, 1e-5])
    w.case("aten._native_batch_norm_legit.default", "train",
           [r.t([2, 3, 4]), r.t([3]), r.t([3]), r.t([3]), r.t([3], F32, "pos"), True, 0.1, 1e-5])
    w.case("aten._native_batch_norm_legit.no_stats", "train", [r.t([2, 3, 4]), r.t([3]), r.t([3]), True, 0.1, 1e-5])
    w.case("aten.native_batch_norm.default", "eval",
           [r.t([2, 3, 4]), r.t([3]), r.t([3]), r.t([3]), r.t([3], F32, "pos"), False, 0.1, 1e-5])
    C = "aten.convolution.default"
    w.case(C, "2d", [r.t([1, 2, 5, 5]), r.t([3, 2, 3, 3]), r.t([3]), [1, 1], [0, 0], [1, 1], False, [0, 0], 1], loose=True)
    w.case(C, "2d_stride_pad", [r.t([2, 2, 5, 4]), r.t([4, 2, 3, 2]), None, [2, 1], [1, 1], [1, 1], False, [0, 0], 1], loose=True)
    w.case(C, "2d_groups_dil", [r.t([1, 4, 6, 6]), r.t([4, 2, 2, 2]), r.t([4]), [1, 1], [0, 0], [2, 2], False, [0, 0], 2], loose=True)
    w.case(C, "1d", [r.t([2, 3, 7]), r.t([2, 3, 3]), r.t([2]), [1], [1], [1], False, [0], 1], loose=True)
    w.case(C, "transposed", [r.t([1, 2, 3, 3]), r.t([2, 3, 2, 2]), r.t([3]), [2, 2], [0, 0], [1, 1], True, [1, 1], 1], loose=True)
    w.case("aten.convolution_backward.default", "2d",
           [r.t([1, 3, 3, 3]), r.t([1, 2, 5, 5]), r.t([3, 2, 3, 3]), [3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
            [True, True, True]], loose=True)
    w.case("aten.avg_pool2d.default", "basic", [r.t([1, 2, 4, 4]), [2, 2]])
    w.case("aten.avg_pool2d.default", "pad_ceil", [r.t([1, 1, 5, 5]), [3, 3], [2, 2], [1, 1], True, False])
    w.case("aten.avg_pool2d.default", "divisor", [r.t([1, 1, 4, 4]), [2, 2], [1, 1], [0, 0], False, True, 3])
    w.case("aten.avg_pool2d_backward.default", "basic",
           [r.t([1, 2, 2, 2]), r.t([1, 2, 4, 4]), [2, 2], [2, 2], [0, 0], False, True, None])
    w.case("aten.avg_pool1d.default", "basic", [r.t([1, 2, 6]), [2]])
    w.case("aten.avg_pool3d.default", "basic", [r.t([1, 1, 4, 4, 4]), [2, 2, 2]])
    w.case("aten.max_pool2d_with_indices.default", "basic", [r.t([1, 2, 4, 4]), [2, 2]])
    w.case("aten.max_pool2d_with_indices.default", "pad_dil",
           [r.t([1, 1, 6, 6]), [3, 3], [2, 2], [1, 1], [1, 1], False])
    w.case("aten.max_pool2d_with_indices.default", "ceil", [r.t([1, 1, 5, 5]), [2, 2], [2, 2], [0, 0], [1, 1], True])
    mp_x = r.t([1, 1, 4, 4])
    mp_out, mp_idx = torch.ops.aten.max_pool2d_with_indices.default(mp_x, [2, 2])
    w.case("aten.max_pool2d_with_indices_backward.default", "basic",
           [r.t([1, 1, 2, 2]), mp_x, [2, 2], [2, 2], [0, 0], [1, 1], False, mp_idx])
    w.case("aten.max_pool3d_with_indices.default", "basic", [r.t([1, 1, 4, 4, 4]), [2, 2, 2]])
    w.case("aten._adaptive_avg_pool2d.default", "basic", [r.t([1, 2, 5, 7]), [2, 3]])
    w.case("aten._adaptive_avg_pool2d.default", "global", [r.t([2, 3, 4, 4]), [1, 1]])
    w.case("aten._adaptive_avg_pool2d_backward.default", "basic", [r.t([1, 2, 2, 3]), r.t([1, 2, 5, 7])])
    w.case("aten._adaptive_avg_pool3d.default", "basic", [r.t([1, 1, 4, 5, 6]), [2, 2, 3]])
    w.case("aten.adaptive_avg_pool1d.default", "basic", [r.t([1, 2, 7]), [3]])
    for op, shape, pad in [("aten.reflection_pad1d.default", [1, 2, 5], [2, 1]),
                           ("aten.reflection_pad2d.default", [1, 1, 4, 4], [1, 2, 2, 1]),
                           ("aten.reflection_pad3d.default", [1, 1, 3, 3, 3], [1, 1, 1, 1, 1, 1]),
                           ("aten.replication_pad2d.default", [1, 1, 3, 4], [2, 0, 1, 3]),
                           ("aten.replication_pad3d.default", [1, 1, 2, 3, 3], [1, 0, 0, 1, 1, 1])]:
        w.case(op, "basic", [r.t(shape), pad])
    w.case("aten.upsample_nearest2d.vec", "size", [r.t([1, 2, 3, 3]), [6, 5], None])
    w.case("aten.upsample_nearest2d.vec", "scale", [r.t([1, 1, 2, 3]), None, [2.0, 1.5]])
    w.case("aten.upsample_bilinear2d.vec", "size", [r.t([1, 2, 3, 3]), [5, 4], False, None], loose=True)
    w.case("aten.upsample_bilinear2d.vec", "align", [r.t([1, 1, 2, 3]), [4, 6], True, None], loose=True)
    w.case("aten.grid_sampler_2d.default", "bilinear",
           [r.t([1, 2, 4, 4]), r.t([1, 3, 3, 2], F32, "unit"), 0, 0, False], loose=True)
    w.case("aten.grid_sampler_2d.default", "nearest_border",
           [r.t([1, 1, 3, 4]), r.t([1, 2, 2, 2]), 1, 1, True], loose=True)
    w.case("aten.col2im.default", "basic", [r.t([1, 4, 9]), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]])
    w.case("aten._cdist_forward.default", "p2", [r.t([3, 4]), r.t([2, 4]), 2.0, None], loose=True)
    w.case("aten._cdist_forward.default", "p1", [r.t([2, 3, 4]), r.t([2, 2, 4]), 1.0, None], loose=True)
    w.case("aten._pdist_forward.default", "p2", [r.t([4, 3]), 2.0], loose=True)
    w.case("aten._embedding_bag.default", "sum",
           [r.t([5, 3]), torch.tensor([0, 2, 1, 4]), torch.tensor([0, 2]), False, 0], loose=True)
    w.case("aten._embedding_bag.default", "mean",
           [r.t([5, 3]), torch.tensor([0, 2, 1, 4]), torch.tensor([0, 1]), False, 1], loose=True)


def gen_misc(w, r):
    w.case("aten.resize_.default", "shrink", [r.t([3, 4]), [2, 3]])
    w.case("aten.resize_.default", "grow", [r.t([2, 2]), [3, 3]], nondet=True)
    w.case("aten._local_scalar_dense.default", "f32", [torch.tensor(2.5)])
    w.case("aten._local_scalar_dense.default", "i64", [torch.tensor(-7)])
    w.case("aten._local_scalar_dense.default", "bool", [torch.tensor(True)])
    w.case("aten.sym_size.int", "dim1", [r.t([3, 4]), 1])
    w.case("aten.sym_size.int", "neg", [r.t([3, 4]), -2])
    w.case("aten.sym_stride.int", "tposed", [tposed(r.t([3, 4])), 1])
    w.case("aten.sym_numel.default", "basic", [r.t([3, 4])])
    w.case("aten.sym_storage_offset.default", "strided", [strided(r.t([2, 3]))])
    w.case("aten.sym_is_contiguous.default", "tposed", [tposed(r.t([3, 4]))])
    w.case("aten.sym_is_contiguous.default", "contig", [r.t([3, 4])])


def gen_fft(w, r):
    # normalization: 0 none, 1 by 1/sqrt(n), 2 by 1/n (ATen's fft_norm_mode).
    r2c = "aten._fft_r2c.default"
    w.case(r2c, "f32_even", [r.t([8]), [0], 0, True])
    w.case(r2c, "f32_odd_full", [r.t([7]), [0], 1, False])
    w.case(r2c, "f64_last", [r.t([3, 10], F64), [1], 2, True])
    w.case(r2c, "f64_2d", [r.t([5, 6], F64), [0, 1], 0, True])
    w.case(r2c, "f64_2d_full", [r.t([5, 6], F64), [0, 1], 1, False])
    w.case(r2c, "f32_dim0", [r.t([6, 5]), [0], 2, True])
    w.case(r2c, "f32_mid", [r.t([3, 4, 5]), [1], 0, True])
    w.case(r2c, "f32_two_of_three", [r.t([4, 5, 6]), [0, 2], 1, False])
    w.case(r2c, "f32_rev_dims", [r.t([4, 7]), [1, 0], 0, True])
    w.case(r2c, "f32_batch_both", [r.t([2, 5, 3, 4]), [1, 3], 2, True])
    w.case(r2c, "tposed", [tposed(r.t([5, 6])), [1], 0, True])
    w.case(r2c, "strided", [strided(r.t([3, 8], F64)), [0, 1], 2, False])
    c2r = "aten._fft_c2r.default"
    w.case(c2r, "c64_even", [r.t([5], C64), [0], 0, 8])
    w.case(c2r, "c64_odd", [r.t([4], C64), [0], 2, 7])
    w.case(c2r, "c128_last", [r.t([3, 6], C128), [1], 1, 10])
    w.case(c2r, "c128_2d_odd", [r.t([4, 5], C128), [0, 1], 2, 9])
    w.case(c2r, "c64_two_of_three", [r.t([3, 4, 5], C64), [0, 2], 0, 8])
    w.case(c2r, "c64_dim0", [r.t([4, 3], C64), [0], 1, 6])
    w.case(c2r, "c64_mid", [r.t([2, 4, 3], C64), [1], 0, 7])
    w.case(c2r, "c128_rev_dims", [r.t([5, 4], C128), [1, 0], 1, 9])
    w.case(c2r, "tposed", [tposed(r.t([4, 5], C64)), [0, 1], 2, 8])
    w.case(c2r, "strided", [strided(r.t([3, 4], C128)), [1], 0, 6])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--ops", default="", help="comma-separated substrings of overload names to generate")
    args = ap.parse_args()
    if os.path.exists(os.path.join(args.out_dir, "ops")):
        shutil.rmtree(os.path.join(args.out_dir, "ops"))
    os.makedirs(args.out_dir, exist_ok=True)
    w = Writer(args.out_dir, [s for s in args.ops.split(",") if s])
    torch.set_num_threads(1)
    for i, gen in enumerate([gen_unary, gen_binary, gen_backward_pointwise, gen_reductions, gen_views, gen_creation,
                             gen_indexing, gen_linalg, gen_norm_conv_pool, gen_misc, gen_fft]):
        gen(w, Rng(1000 + i))
    summary = {"torch": torch.__version__, "cases": sum(w.counts.values()), "bytes": w.total_bytes,
               "per_op": dict(sorted(w.counts.items())), "skipped": dict(sorted(w.skipped.items()))}
    with open(os.path.join(args.out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    print("torch %s: %d cases for %d ops, %d bytes; %d skipped" % (
        torch.__version__, summary["cases"], len(w.counts), w.total_bytes, sum(len(v) for v in w.skipped.values())))


if __name__ == "__main__":
    sys.exit(main())
