"""FX graphs of ATen ops (make_fx, aot_autograd with core ATen decompositions) to .tir text.

Every value needs its dtype, sizes, strides and storage offset. They come from `node.meta['val']`
(fake tensors, possibly with symbolic sizes), else `node.meta['tensor_meta']` plus an offset of 0,
else from running the graph on example inputs (`values`). Which results share storage with an
argument (views) comes from the op's schema alias annotations, as torch's own functionalization
reads them.
"""
import math
import operator
import os
import re

DTYPES = {
    "torch.bool": "bool", "torch.uint8": "u8", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32",
    "torch.int64": "i64", "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32",
    "torch.float64": "f64", "torch.complex64": "c64", "torch.complex128": "c128",
}
# Largest get_attr tensor (not a Parameter) written inline as a constant; others become params.
MAX_INLINE_CONSTANT = 16


def _hints(env):
    """Symbol -> example value from a ShapeEnv (torch >= 2.11 names it backed_var_to_val)."""
    if env is None:
        return {}
    for attr in ("backed_var_to_val", "var_to_val"):
        if hasattr(type(env), attr) or attr in getattr(env, "__dict__", {}):
            return getattr(env, attr) or {}
    return {}


def _finite_int(v):
    """A range bound as an int; None for an infinite one (sympy's oo, torch's int_oo)."""
    if v is None or getattr(v, "is_infinite", False) or getattr(v, "is_finite", True) is False:
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


class Unsupported(Exception):
    """The graph (or one node) has something .tir cannot express; the message says what."""


def is_symbolic(x):
    """A SymInt, SymFloat or SymBool (torch 2.x), or their torch 1.13 forms."""
    return type(x).__name__ in ("SymInt", "SymIntNode", "PySymInt", "SymFloat", "SymFloatNode", "PySymFloat",
                                "SymBool", "SymBoolNode")


def sym_expr(x):
    """The sympy expression behind a SymInt (torch 2.x: .node.expr; 1.13: .get_pyobj().expr)."""
    node = getattr(x, "node", None)
    if node is not None and hasattr(node, "expr"):
        return node.expr, getattr(node, "shape_env", None)
    if hasattr(x, "get_pyobj"):
        x = x.get_pyobj()
    if hasattr(x, "expr") and hasattr(x, "shape_env"):
        return x.expr, x.shape_env
    raise Unsupported("cannot read the expression of symbolic value %r" % (x,))


def _is_float_symbol(e):
    """A float symbol (torch.compile with specialize_float=False: a learning rate, names zf0...;
    a float item(): zuf0...)."""
    return getattr(e, "is_integer", None) is False or str(e).startswith(("zf", "zuf"))


def _is_unbacked(e):
    """An unbacked symbol: a value only the data knows (item(): u0, zuf0; nonzero's count)."""
    return str(e).startswith(("u", "zuf"))


class Symbols:
    """Names sympy symbols s0, s1, ... (float ones f0, f1, ...; unbacked ones u0, ... and uf0, ...)
    and renders sympy expressions in .tir syntax."""

    def __init__(self):
        self.names = {}  # sympy symbol -> tir name
        self.floats = set()  # the float ones
        self.counts = {}  # name prefix -> symbols named with it so far
        self.shape_env = None

    def _name(self, e):
        prefix = ("uf" if _is_float_symbol(e) else "u") if _is_unbacked(e) else ("f" if _is_float_symbol(e) else "s")
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        if _is_float_symbol(e):
            self.floats.add(e)
        return "%s%d" % (prefix, n)

    def expr(self, e):
        import sympy
        if isinstance(e, bool) or e is sympy.true or e is sympy.false:
            return "true" if bool(e) else "false"
        if isinstance(e, int):
            return str(e)
        if isinstance(e, sympy.Integer):
            return str(int(e))
        if isinstance(e, sympy.Symbol):
            if e not in self.names:
                self.names[e] = self._name(e)
            return self.names[e]
        if getattr(e, "is_infinite", False):  # sympy's oo, torch's int_oo
            return "inf" if e > 0 else "-inf"
        if isinstance(e, sympy.Float):
            return self.value(float(e))
        args = [self.expr(a) for a in e.args]
        name = type(e).__name__
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(args) + ")"
        if isinstance(e, sympy.Mul):
            if any(isinstance(a, sympy.Rational) and not isinstance(a, sympy.Integer) for a in e.args):
                raise Unsupported("non-integer coefficient in symbolic size " + str(e))
            return "(" + "*".join(args) + ")"
        if isinstance(e, sympy.Pow):
            if not (isinstance(e.args[1], sympy.Integer) and int(e.args[1]) >= 0):
                raise Unsupported("symbolic power " + str(e))
            return "(%s**%s)" % (args[0], args[1])
        binary = {"FloorDiv": "//", "CleanDiv": "//", "Mod": "%", "PythonMod": "%", "IntTrueDiv": "/",
                  "FloatTrueDiv": "/", "Equality": "==", "Unequality": "!=", "StrictLessThan": "<",
                  "LessThan": "<=", "StrictGreaterThan": ">", "GreaterThan": ">="}
        if name in binary and len(args) == 2:
            return "(%s %s %s)" % (args[0], binary[name], args[1])
        if name == "ModularIndexing":
            return "((%s // %s) %% %s)" % tuple(args)
        func = {"Min": "Min", "Max": "Max", "And": "And", "Or": "Or", "Not": "Not", "ToFloat": "ToFloat"}
        if name in func:
            return "%s(%s)" % (func[name], ", ".join(args))
        raise Unsupported("symbolic expression %s (%s)" % (e, name))

    def value(self, x):
        """An int, SymInt, float or bool as a .tir expression."""
        if is_symbolic(x):
            e, env = sym_expr(x)
            self.shape_env = self.shape_env or env
            return self.expr(e)
        if isinstance(x, bool):
            return "true" if x else "false"
        if isinstance(x, int):
            return str(x)
        if isinstance(x, float):
            if math.isnan(x):
                return "nan"
            if math.isinf(x):
                return "inf" if x > 0 else "-inf"
            return repr(x) if ("." in repr(x) or "e" in repr(x)) else repr(x) + ".0"
        raise Unsupported("value %r of type %s" % (x, type(x).__name__))

    def declarations(self):
        """`sym` lines: hints from the ShapeEnv, ranges where torch records them (else [2, inf],
        as torch specializes sizes 0 and 1)."""
        lines = []
        env = self.shape_env
        values = _hints(env)
        for s, name in self.names.items():
            if _is_unbacked(s):
                if s in self.floats:
                    lines.append("  sym %s : float, unbacked" % name)
                    continue
                r = getattr(env, "var_to_range", {}).get(s) if env is not None else None
                lo = _finite_int(r.lower) if r is not None else None
                up = _finite_int(r.upper) if r is not None else None
                lines.append("  sym %s : unbacked, range=[%s, %s]" % (name, "-inf" if lo is None else lo,
                                                                      "inf" if up is None else up))
                continue
            if s in self.floats:
                if s not in values:
                    raise Unsupported("float symbol %s has no hint" % s)
                lines.append("  sym %s : float, hint=%s" % (name, self.value(float(values[s]))))
                continue
            hint = int(values[s]) if s in values else None
            if hint is None:
                raise Unsupported("symbol %s has no hint" % s)
            lo, hi = 2, "inf"
            r = getattr(env, "var_to_range", {}).get(s) if env is not None else None
            if r is not None:
                lo = _finite_int(r.lower)
                lo = 0 if lo is None else lo
                up = _finite_int(r.upper)
                hi = "inf" if up is None else str(up)
            lo = min(max(lo, 0), hint)
            lines.append("  sym %s : hint=%d, range=[%d, %s]" % (name, hint, lo, hi))
        return lines

    def guards(self):
        """`guard` lines for the ShapeEnv's recorded guards over symbols this graph uses."""
        env = self.shape_env
        out = []
        for g in getattr(env, "guards", []) or []:
            e = getattr(g, "expr", None)
            if e is None and isinstance(g, tuple):  # torch 1.13: (expr, the value it had)
                import sympy
                v = g[1]
                if isinstance(v, bool) or v is sympy.true or v is sympy.false:
                    e = g[0] if bool(v) else sympy.Not(g[0])
                else:
                    e = sympy.Eq(g[0], v)
            if e is None or not set(getattr(e, "free_symbols", ())) <= set(self.names):
                continue
            try:
                out.append("  guard " + self.expr(e))
            except Unsupported:
                continue  # dynamo checks its guards itself; toroid's own are checked at run time
        return out


def _alias_set(arg):
    """The alias set of a schema argument ('a' for "Tensor(a)", "Tensor(a -> *)", "Tensor(a!)")."""
    info = getattr(arg, "alias_info", None)
    return min(info.before_set) if info is not None and info.before_set else None


def _return_alias_sets(schema):
    """Per return, its alias set or None. Read from the schema's text: a list return
    ("Tensor(a)[]", split) has its set on the element type, which .alias_info does not show."""
    text = str(schema).split(") -> ", 1)[1].strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        m = re.match(r"\s*Tensor\((\w+)", p)
        out.append(m.group(1) if m else None)
    return out


def tir_dtype(dtype):
    d = DTYPES.get(str(dtype))
    if d is None:
        raise Unsupported("dtype " + str(dtype))
    return d


def _contiguous(sizes):
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc = acc * s
    return list(reversed(out))


def tensor_type(t, syms, storage=None, device=None):
    """`f32[s0, 64]{strides=[...], offset=.., device=cuda:0, storage=%v}` for a tensor or fake."""
    sizes = list(t.shape)
    strides = list(t.stride())
    offset = t.storage_offset() if hasattr(t, "storage_offset") else 0
    text = "%s[%s]" % (tir_dtype(t.dtype), ", ".join(syms.value(s) for s in sizes))
    attrs = []
    static = all(not is_symbolic(x) for x in sizes + strides)
    if static:
        # The stride of a size-1 dim is arbitrary in torch; write the contiguous one.
        strides = [c if s == 1 else st for s, st, c in zip(sizes, strides, _contiguous(sizes))]
        contiguous = strides == _contiguous(sizes)
    else:
        # torch may give a guarded-constant stride (48) where the size is a symbol (s1 with a
        # guard s1 == 48); contiguity says whether the default strides are meant.
        try:
            contiguous = bool(t.is_contiguous())
        except Exception:
            contiguous = False
    if not contiguous:
        attrs.append("strides=[%s]" % ", ".join(syms.value(s) for s in strides))
    if is_symbolic(offset) or offset != 0:
        attrs.append("offset=" + syms.value(offset))
    dev = device or getattr(t, "device", None)
    if dev is not None and dev.type == "cuda":
        attrs.append("device=cuda:%d" % (dev.index or 0))
    if storage is not None:
        attrs.append("storage=" + storage)
    return text + ("{" + ", ".join(attrs) + "}" if attrs else "")


def scalar_type(x, syms):
    if isinstance(x, bool) or type(x).__name__.startswith("SymBool"):
        base = "bool"
    elif isinstance(x, int) or type(x).__name__.startswith("SymInt"):
        base = "int"
    else:
        base = "float"
    if is_symbolic(x):
        return "%s{value=%s}" % (base, syms.value(x))
    return base


def _is_tensor(x):
    return hasattr(x, "shape") and hasattr(x, "stride") and hasattr(x, "dtype")


def _schema_name(target):
    schema = getattr(target, "_schema", None)
    if schema is None:
        return None
    return schema.name.replace("::", ".") + "." + (schema.overload_name or "default")


# Ops written as an equivalent one toroid has: name -> (new name, (positional args, the traced
# value) -> new ones).
# _reshape_alias (torch <= 2.0) is only made where a view is possible, and view gives its strides;
# arange's short forms are start_step with defaults (as core ATen decomposes them).
REWRITES = {
    "aten._reshape_alias.default": ("aten.view.default", lambda a, v: list(a[:2])),
    "aten.arange.default": ("aten.arange.start_step", lambda a, v: [0, a[0], 1]),
    "aten.arange.start": ("aten.arange.start_step", lambda a, v: [a[0], a[1], 1]),
    # empty_like under dynamic shapes: the strides its physical layout gives, as traced.
    "aten.empty_permuted.default": ("aten.empty_strided.default", lambda a, v: [a[0], list(v.stride())]),
}


# Ops whose schema has no alias annotation but whose result toroid (like Inductor) treats as a
# view of the argument at this position.
VIEW_OF_ARG = {"aten._unsafe_view.default": 0}


def hop_name(target):
    """"cond" or "while_loop" for torch.ops.higher_order.cond / .while_loop; None otherwise."""
    try:
        from torch._ops import HigherOrderOperator
    except ImportError:  # torch < 2.1
        return None
    if not isinstance(target, HigherOrderOperator):
        return None
    name = getattr(target, "_name", None) or getattr(target, "__name__", None)
    return name if name in ("cond", "while_loop") else None


def op_name(target):
    """"aten.add.Tensor" for torch.ops.aten.add.Tensor (after REWRITES); None for other callables."""
    name = _schema_name(target)
    return REWRITES.get(name, (name,))[0] if name else None


def torch_fx_node():
    import torch
    return torch.fx.Node


def user_kernel_kind(target):
    from .user_kernels import user_kernel_kind as kind
    return kind(target)


def _tir_string(text):
    text = "".join(c if c >= " " else " " for c in text)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def user_stack_line(node):
    """The innermost frame of the user's code that made `node` ("model.py:12 in forward: return
    x.relu()"), from the stack trace torch.compile records in node.meta; None without one."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not trace:
        return None
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n?([^\n]*)', trace)
    if not frames:
        return None
    path, line, fn, code = frames[-1]
    where = "%s:%s in %s" % (os.path.basename(path), line, fn)
    return where + (": " + code.strip() if code.strip() else "")


def origin(node):
    """The ` origin("fx name", "stack line")` suffix of a node's .tir line: provenance that the
    compiler carries to the kernels (toroidc --emit=provenance, the dump_dir's provenance.json)."""
    stack = user_stack_line(node)
    return " origin(%s%s)" % (_tir_string(node.name), ", " + _tir_string(stack) if stack else "")


class Emitter:
    """Builds the text of one graph from FX nodes."""

    def __init__(self, name, values, attr, device="cpu", symbol_sources=None):
        self.name = name
        self.values = values  # node -> example value (tensor, fake, SymInt, tuple)
        self.attr = attr  # get_attr target -> tensor
        self.syms = Symbols()
        self.device = device
        self.lines = []
        self.names = {}  # (node, index or None) -> "%name"
        self.storage = {}  # "%value" -> "%root" of its storage
        self.used = set()
        self.inputs, self.params = [], []  # nodes (inputs first at run time, then params)
        self.donated = []  # the inputs emitted `input donated`
        self.line_nodes = {}  # index in self.lines -> the call node it emits
        self.bound = set()  # sympy symbols an input binds
        self.symbol_sources = symbol_sources or {}  # sympy symbol -> node whose value it is
        self.kernel_table = {}  # user kernel name -> its `kernel` line (the root graph's table)

    def _fresh(self, base):
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in base) or "v"
        name, i = "%" + base, 0
        while name in self.used:
            i += 1
            name = "%%%s_%d" % (base, i)
        self.used.add(name)
        return name

    def arg(self, a):
        import torch
        if isinstance(a, torch.fx.Node):
            if (a, None) in self.names:
                return self.names[(a, None)]
            # A symbolic scalar computed outside (sym_size, SymInt arithmetic): its expression.
            if is_symbolic(self.values.get(a)):
                return self.syms.value(self.values[a])
            raise Unsupported("value %s is used before it is defined" % a.name)
        if a is None:
            return "None"
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, torch.dtype):
            tir_dtype(a)
            return str(a)
        if isinstance(a, torch.device):
            return 'device("%s")' % (a.type if a.index is None else "%s:%d" % (a.type, a.index))
        if isinstance(a, (torch.layout, torch.memory_format)):
            return str(a)
        if isinstance(a, str):
            return '"' + a.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return self.syms.value(a)

    def _type(self, v, storage=None, device=None):
        if _is_tensor(v):
            return tensor_type(v, self.syms, storage, device)
        if isinstance(v, (int, float, bool)) or is_symbolic(v):
            return scalar_type(v, self.syms)
        raise Unsupported("result of type %s" % type(v).__name__)

    def _undefined_type(self, node):
        """The type of a result PyTorch leaves undefined (None: a false output_mask entry): toroid's
        graph has an empty 1-d tensor there, of the call's first tensor operand's dtype and device."""
        import torch
        for a in node.args:
            t = self.values.get(a) if isinstance(a, torch.fx.Node) else None
            if _is_tensor(t):
                return tensor_type(torch.empty(0, dtype=t.dtype, device="meta"), self.syms,
                                   device=self._moved(t) or t.device)
        raise Unsupported("an undefined result of %s, which has no tensor operand" % node.name)

    def define(self, node, index=None):
        name = self._fresh(node.name if index is None else "%s_%d" % (node.name, index))
        self.names[(node, index)] = name
        return name

    def _moved(self, v):
        """The device a CPU 0-dim tensor takes in a CUDA graph (torch treats it as a scalar, as
        in Adam's step counts); the runtime moves it there. None: its own."""
        import torch
        if self.device == "cuda" and _is_tensor(v) and v.device.type == "cpu" and v.dim() == 0:
            return torch.device("cuda", 0)
        return None

    def placeholder(self, node, donated=False):
        """An input; `donated`: its caller gives up the tensor's memory (`input donated`)."""
        v = self.values[node]
        name = self.define(node)
        self.storage[name] = name
        self.inputs.append(node)
        if donated:
            self.donated.append(node)
        self.lines.append("  %s = input%s : %s%s" % (name, " donated" if donated else "",
                                                     self._type(v, device=self._moved(v)), origin(node)))
        # Symbols toroid can bind from this input: a size (or scalar value) that is one symbol.
        for x in (list(v.shape) if _is_tensor(v) else [v]):
            if is_symbolic(x) and sym_expr(x)[0].is_Symbol:
                self.bound.add(sym_expr(x)[0])

    def _symbol_inputs(self):
        """Scalar inputs for the symbols no input binds (used only in arguments, such as the
        size of a new tensor), from `symbol_sources`: a node that computed the symbol before
        this graph runs. Without one the graph cannot know the symbol's value: Unsupported."""
        lines, nodes = [], []
        for sym in list(self.syms.names):
            if sym in self.bound:
                continue
            src = self.symbol_sources.get(sym)
            if src is None:
                raise Unsupported("symbol %s is not determined by the inputs of this graph" % sym)
            name = self._fresh(src.name)
            kind = "float" if sym in self.syms.floats else "int"
            lines.append("  %s = input : %s{value=%s}" % (name, kind, self.syms.names[sym]))
            nodes.append(src)
        self.inputs = nodes + self.inputs
        return lines

    def get_attr(self, node):
        t = self.attr[node.target]
        import torch
        if isinstance(t, torch.fx.GraphModule):
            return  # a cond / while_loop subgraph: written under its call
        name = self.define(node)
        self.storage[name] = name
        import torch
        if t.numel() <= MAX_INLINE_CONSTANT and not isinstance(t, torch.nn.Parameter) and not t.is_complex():
            with real_mode():
                flat = t.detach().cpu().contiguous().reshape(-1).tolist()
            data = self.syms.value(flat[0]) if t.dim() == 0 else "[" + ", ".join(self.syms.value(x) for x in flat) + "]"
            ty = self._type(t, device=self._moved(t))
            self.lines.append("  %s = constant %s : %s" % (name, data, ty))
            return
        self.params.append(node)
        self.lines.append('  %s = param "%s" : %s' % (name, node.target, self._type(t, device=self._moved(t))))

    def higher_order(self, node, kind):
        """higher_order.cond / .while_loop with its subgraphs written under the call."""
        import torch
        v = self.values[node]
        results = list(v) if isinstance(v, (tuple, list)) else [v]
        args = list(node.args)
        if kind == "cond":
            pred, true_gm, false_gm, operands = args[:4]
            subs = [("true_branch", true_gm), ("false_branch", false_gm)]
            head = [self.arg(pred), self.arg(list(operands))]
        else:
            cond_gm, body_gm, carried = args[:3]
            extra = list(args[3]) if len(args) > 3 else []
            subs = [("cond_fn", cond_gm), ("body_fn", body_gm)]
            head = [self.arg(list(carried) + extra)]
        names, types = [], []
        for i, r in enumerate(results):
            if not _is_tensor(r):
                raise Unsupported("%s returns a %s; compiled control flow returns tensors" % (kind, type(r).__name__))
            name = self.define(node, i)
            self.storage[name] = name
            names.append(name)
            types.append(self._type(r))
        self.line_nodes[len(self.lines)] = node
        self.lines.append("  %s = higher_order.%s(%s) : %s%s" % (", ".join(names), kind, ", ".join(head),
                                                                  ", ".join(types), origin(node)))
        for sub_name, gm_node in subs:
            gm = self.attr[gm_node.target] if isinstance(gm_node, torch.fx.Node) else gm_node
            self.lines += ["    " + line for line in self._subgraph(sub_name, gm)]

    def user_kernel(self, node, kind):
        """higher_order.user_kernel_functional for a Triton kernel (triton_kernel_wrapper_functional)
        or a toroid.cuda_kernel launch (toroid_user::launch); its results are the new values of the
        tensors it writes, named for getitem by argument name (Triton) or position (CUDA)."""
        from . import user_kernels as uk
        if self.device != "cuda":
            raise Unsupported("user kernels run on CUDA devices only")
        value = lambda a: self.values[a] if isinstance(a, torch_fx_node()) else a  # noqa: E731
        if kind == "triton":
            try:
                name, launch, args, grid, torch_cloned = uk.triton_call(node, self.values)
            except Unsupported:
                raise
            except Exception as e:  # the side table, autotuning, Triton's API: eager runs it, logged
                raise Unsupported("Triton kernel call %s: %s: %s" % (node.name, type(e).__name__, e))
            tensor_args = [n for n in launch.runtime if _is_tensor(value(args[n]))]
            scalar_args = [n for n in launch.runtime if n not in tensor_args]
            order = [tensor_args.index(n) if n in tensor_args else len(tensor_args) + scalar_args.index(n)
                     for n in launch.runtime]
            order += [len(tensor_args) + len(scalar_args) + e for e in range(launch.extra)]
            written = sorted({tensor_args.index(n) for n in set(launch.written) | set(torch_cloned) if n in tensor_args})
            keys = [tensor_args[w] for w in written]
            # One table entry per compiled kernel (a config of an autotuned one is its own).
            name = "%s_%s" % (name, uk.hashlib.sha256(launch.ptx.encode()).hexdigest()[:8])
            self.kernel_table.setdefault(name, uk.table_entry(name, "ptx", launch.ptx, launch.entry, launch.ttir,
                                                              launch.cubin))
            fields = ['"%s"' % name, "[" + ", ".join(self.arg(args[n]) for n in tensor_args) + "]",
                      "[" + ", ".join([self.arg(args[n]) for n in scalar_args] + ["0"] * launch.extra) + "]",
                      "grid=[%s]" % ", ".join(self.arg(g) for g in grid), "block=[%d]" % (32 * launch.num_warps),
                      "shared=%d" % launch.shared, "writes=%s" % written, "tensors_to_clone=%s" % written,
                      "aligned=%s" % sorted(tensor_args.index(n) for n in launch.aligned)]
            if order != list(range(len(order))):
                fields.append("order=%s" % order)
            call = "higher_order.user_kernel_functional(%s)" % ", ".join(fields)
            inputs = [args[k] for k in keys]
        else:
            key, tensors, ints, floats, pattern, grid, block, shared = node.args
            kernel = uk._REGISTRY[key]
            scalars, i, f = [], 0, 0
            for c in pattern:
                if c == "i":
                    scalars.append(self.arg(ints[i]))
                    i += 1
                elif c == "f":
                    scalars.append(self.arg(floats[f]))
                    f += 1
            call, written = uk.launch_call_text(kernel, [self.arg(t) for t in tensors], scalars, pattern,
                                                [self.arg(g) for g in grid], [self.arg(b) for b in block],
                                                self.arg(shared), table=self.kernel_table)
            keys = list(range(len(written)))
            inputs = [tensors[w] for w in written]
        names, types = [], []
        for k, src in zip(keys, inputs):
            name = self._fresh("%s_%s" % (node.name, k))
            self.names[(node, k)] = name
            self.storage[name] = name
            names.append(name)
            types.append(self._type(value(src)))
        self.line_nodes[len(self.lines)] = node
        head = ", ".join(names) + " = " if names else ""
        self.lines.append("  %s%s%s%s" % (head, call, " : " + ", ".join(types) if types else "", origin(node)))

    def _subgraph(self, name, gm):
        """The lines of `subgraph name functional { ... }` for GraphModule `gm`, sharing this
        graph's symbols."""
        values = node_values(gm)
        sub = Emitter(name, values, get_attrs(gm), self.device, self.symbol_sources)
        sub.syms = self.syms
        sub.kernel_table = self.kernel_table
        out = next(n for n in gm.graph.nodes if n.op == "output")
        flat, _ = flatten_outputs(out.args[0])
        for n in gm.graph.nodes:
            sub.emit(n)
        return ["subgraph %s functional {" % name] + sub.lines + ["  output " + ", ".join(sub.arg(o) for o in flat),
                                                                 "}"]

    def emit(self, n):
        if n.op == "placeholder":
            self.placeholder(n)
        elif n.op == "get_attr":
            self.get_attr(n)
        elif n.op == "call_function" and n.target is operator.getitem:
            src, idx = n.args
            if (src, idx) not in self.names:
                raise Unsupported("getitem of %s" % src.name)
            self.names[(n, None)] = self.names[(src, idx)]
        elif n.op == "call_function" and hop_name(n.target):
            self.higher_order(n, hop_name(n.target))
        elif n.op == "call_function" and user_kernel_kind(n.target):
            self.user_kernel(n, user_kernel_kind(n.target))
        elif n.op == "call_function":
            self.call(n)
        elif n.op != "output":
            raise Unsupported("node %s (%s)" % (n.name, n.op))

    def call(self, node):
        op = op_name(node.target)
        if op is None:
            raise Unsupported("call of %s (not an ATen op)" % getattr(node.target, "__name__", node.target))
        import torch
        schema = node.target._schema
        v = self.values[node]
        results = list(v) if isinstance(v, (tuple, list)) else [v]
        # Returns of the schema that alias an argument: the argument's alias set -> its value.
        alias_arg = {}
        for i, a in enumerate(schema.arguments):
            sets = _alias_set(a)
            if sets is None:
                continue
            val = node.args[i] if i < len(node.args) else node.kwargs.get(a.name)
            if isinstance(val, (list, tuple)):
                val = val[0] if val else None
            if val is not None and hasattr(val, "op"):
                alias_arg[sets] = self.names.get((val, None))
        ret_sets = _return_alias_sets(schema)
        if op in VIEW_OF_ARG and isinstance(node.args[VIEW_OF_ARG[op]], torch.fx.Node):
            alias_arg["view"] = self.names.get((node.args[VIEW_OF_ARG[op]], None))
            ret_sets = ["view"]
        if v is None:  # an assert: a call without results
            args = [self.arg(a) for a in node.args] + ["%s=%s" % (k, self.arg(a)) for k, a in node.kwargs.items()]
            self.line_nodes[len(self.lines)] = node
            self.lines.append("  %s(%s)%s" % (op, ", ".join(args), origin(node)))
            return
        self._note_defined(results)
        names, types = [], []
        single = not isinstance(v, (tuple, list))
        for i, r in enumerate(results):
            name = self.define(node, None if single else i)
            sets = ret_sets[min(i, len(ret_sets) - 1)]  # a list return covers every result
            root = alias_arg.get(sets) if sets is not None else None
            root = self.storage.get(root) if root else None
            self.storage[name] = root or name
            names.append(name)
            types.append(self._undefined_type(node) if r is None and not single else
                         self._type(r, root, device=self._moved(r)))
        if single:
            self.names[(node, None)] = names[0]
        rewrite = REWRITES.get(_schema_name(node.target))
        positional = rewrite[1](node.args, v) if rewrite else node.args
        kwargs = dict(node.kwargs)
        # A creation op (scalar_tensor, full) says where its result is: where the value is, or
        # the GPU for a CPU 0-dim result computed there (see _moved).
        if len(results) == 1 and _is_tensor(results[0]) and any(a.name == "device" for a in schema.arguments) and \
                not any(a.name == "device" for a in schema.arguments[:len(node.args)]):
            dev = self._moved(results[0]) or results[0].device
            kwargs["device"] = torch.device(dev.type, dev.index or 0) if dev.type == "cuda" else dev
        args = [self.arg(a) for a in positional] + ["%s=%s" % (k, self.arg(a)) for k, a in kwargs.items()]
        self.line_nodes[len(self.lines)] = node
        self.lines.append("  %s = %s(%s) : %s%s" % (", ".join(names), op, ", ".join(args), ", ".join(types), origin(node)))

    def _note_defined(self, results):
        """Unbacked symbols this call binds (an item() value, nonzero's row count): known to the
        graph from then on, so no input need carry them."""
        for r in results:
            for x in (list(r.shape) if _is_tensor(r) else [r]):
                if is_symbolic(x):
                    e = sym_expr(x)[0]
                    if e.is_Symbol and _is_unbacked(e):
                        self.bound.add(e)

    def render(self, outputs):
        """The graph's text; also sets self.node_at_line (1-based line -> call node), which maps
        a compile error's location back to its node."""
        out = "  output " + ", ".join(self.arg(o) for o in outputs)
        head = ["graph @%s functional {" % self.name] + self.syms.declarations() + self.syms.guards()
        head += list(self.kernel_table.values())
        head += self._symbol_inputs()
        self.node_at_line = {len(head) + i + 1: n for i, n in self.line_nodes.items()}
        return "\n".join(head + self.lines + [out, "}", ""])


def _modes_differ(values):
    """Whether the fake tensors among `values` come from more than one FakeTensorMode. make_fx in
    real mode gives each node a fake tensor of its own mode made from sizes and strides alone, so a
    view's storage offset is lost (torch 2): such a graph's values come from running it instead."""
    modes = set()
    for v in values:
        for t in v if isinstance(v, (list, tuple)) else [v]:
            mode = getattr(t, "fake_mode", None)
            if mode is not None:
                modes.add(id(mode))
    return len(modes) > 1


def node_values(gm, example_inputs=None):
    """Example values per node: meta['val'] where present; a node without one (torch 1.13 gives
    multi-result ops none) is run on its arguments' fake values in their FakeTensorMode; else the
    graph is run on copies of `example_inputs` (also where the meta values come from make_fx's real
    mode, _modes_differ)."""
    import torch
    from torch.fx.node import map_arg
    nodes = list(gm.graph.nodes)
    vals = {}
    known = set()  # nodes whose value is known, None included (an assert returns nothing)
    if example_inputs is not None and _modes_differ(n.meta.get("val") for n in nodes):
        nodes_meta = []  # make_fx in real mode: run the graph (below) for the views' offsets
    else:
        nodes_meta = nodes
    for n in nodes_meta:
        returns_nothing = n.op == "call_function" and getattr(n.target, "_schema", None) is not None and \
            not n.target._schema.returns
        if "val" in n.meta and (n.meta["val"] is not None or returns_nothing) or returns_nothing:
            vals[n] = n.meta.get("val")
            known.add(n)
        elif n.op == "call_function" and n.all_input_nodes and all(a in vals for a in n.all_input_nodes):
            mode = next((getattr(vals[a], "fake_mode", None) for a in n.all_input_nodes
                         if getattr(vals[a], "fake_mode", None) is not None), None)
            if mode is not None:
                with mode:
                    vals[n] = n.target(*map_arg(n.args, vals.get), **map_arg(n.kwargs, vals.get))
    missing = [n for n in nodes if n.op not in ("output", "get_attr") and n not in vals and n not in known]
    if not missing:
        return vals
    if example_inputs is None:
        raise Unsupported("node %s has no meta['val'] and no example inputs were given" % missing[0].name)

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            r = super().run_node(n)
            vals.setdefault(n, r)
            return r

    with torch.no_grad():
        Recorder(gm).run(*[_layout_copy(x) for x in example_inputs])
    return vals


def _layout_copy(x):
    """A copy of tensor `x` and its whole storage, viewed with its sizes, strides and offset (a
    graph that writes its inputs must not write the caller's while its values are found; an
    as_strided may read past the view's own elements); anything else as it is."""
    import torch
    if not isinstance(x, torch.Tensor) or type(x) is not torch.Tensor and not isinstance(x, torch.nn.Parameter):
        return x
    with torch.no_grad():
        try:
            n = x.untyped_storage().nbytes() // x.element_size() if hasattr(x, "untyped_storage") \
                else x.storage().size()
            copy = x.new_empty(n)
            copy.copy_(x.as_strided((n,), (1,), 0))
            return copy.as_strided(x.shape, x.stride(), x.storage_offset())
        except RuntimeError:  # a storage of its own kind (sparse, quantized): not copied
            return x


def emit_nodes(nodes, outputs, values, attr, name="main", boundary=(), device="cpu", symbol_sources=None,
               donated=()):
    """Emits `nodes` (a topologically ordered list) as a graph; `boundary` nodes defined outside
    become inputs (`input donated` for those in `donated`), and so do `symbol_sources` nodes
    (sympy symbol -> a node computed earlier whose value is that symbol) for symbols no input
    binds. Returns the Emitter: .text, .inputs and .params (nodes, in run-time order),
    .node_at_line."""
    e = Emitter(name, values, attr, device, symbol_sources)
    for b in boundary:
        e.placeholder(b, b in donated)
    for n in nodes:
        if n.op == "output":
            raise Unsupported("node %s (%s)" % (n.name, n.op))
        e.emit(n)
    e.text = e.render(outputs)
    return e


def flatten_outputs(arg):
    """The output node's argument as a flat list, and a function rebuilding the structure."""
    if isinstance(arg, (list, tuple)):
        parts = [flatten_outputs(a) for a in arg]
        flat = [x for p, _ in parts for x in p]
        kind = type(arg)
        if not any(isinstance(a, (list, tuple)) for a in arg):  # flat: no per-element rebuilding
            if issubclass(kind, tuple) and hasattr(kind, "_fields"):
                return flat, lambda vals: kind(*vals)
            return flat, tuple if issubclass(kind, tuple) else list

        def rebuild(vals):
            out, i = [], 0
            for p, r in parts:
                out.append(r(vals[i:i + len(p)]))
                i += len(p)
            if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a namedtuple
                return kind(*out)
            return tuple(out) if issubclass(kind, tuple) else list(out)
        return flat, rebuild
    return [arg], lambda vals: vals[0]


def graph_to_tir(gm, example_inputs=None, name="main"):
    """The whole GraphModule as .tir text (str)."""
    values = node_values(gm, example_inputs)
    attr = get_attrs(gm)
    nodes = [n for n in gm.graph.nodes if n.op != "output"]
    out = next(n for n in gm.graph.nodes if n.op == "output")
    flat, _ = flatten_outputs(out.args[0])
    return emit_nodes(nodes, flat, values, attr, name).text


def real_mode():
    """A context where no fake tensor mode is active. Backends are called while AOTAutograd's
    FakeTensorMode may still be current; reading a real constant's data (detach, cpu, tolist)
    under it raises "Please convert all Tensors to FakeTensors first"."""
    import contextlib
    try:
        from torch._subclasses.fake_tensor import unset_fake_temporarily
    except ImportError:  # torch < 2.1 has no such mode around backends
        return contextlib.nullcontext()
    return unset_fake_temporarily()


def get_attrs(gm):
    """get_attr target -> the tensor it names. A fake tensor that stands for a constant (fake
    modes keep small constants' real values in .constant) is replaced by that value; a fake
    tensor without one cannot be compiled or run."""
    out = {}
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            obj = gm
            for part in n.target.split("."):
                obj = getattr(obj, part)
            if type(obj).__name__ == "FakeTensor":
                real = getattr(obj, "constant", None)
                if real is None:
                    raise Unsupported("get_attr %s is a fake tensor with no real value" % n.target)
                obj = real
            out[n.target] = obj
    return out
