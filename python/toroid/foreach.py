"""Expands the multi-tensor `_foreach_*` ops (what torch.optim's foreach optimizers trace to) into
one ATen op per list element, so that toroid fuses each parameter's update instead of the whole
step falling back to eager. A foreach op's users are getitems of its result list; each is
replaced by its element's op. Variants without a mapping here (in-place ones, Tensor-valued
scalars) are left as they are and fall back.
"""
import operator

_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
_UNARY = ("neg", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log1p", "log2", "log10", "abs", "sign",
          "sigmoid", "tanh", "sin", "cos", "ceil", "floor", "round", "trunc", "erf", "frac")


def _first_list(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            return a
    return None


def _builder(aten, base, overload, args, kwargs):
    """A function (graph, i) -> the node for element i, or None when this variant has no mapping."""
    def call(graph, op, *a, **k):
        return graph.call_function(op, tuple(a), k)

    alpha = {"alpha": kwargs["alpha"]} if "alpha" in kwargs else {}
    if base in _BINARY:
        if base == "pow" and overload == "ScalarAndTensor":
            scalar, exps = args[0], args[1]
            return lambda g, i: call(g, aten.pow.Scalar, scalar, exps[i])
        special = {"pow": aten.pow.Tensor_Tensor, "maximum": aten.maximum.default, "minimum": aten.minimum.default}
        tensor_op = special.get(base) or getattr(aten, base).Tensor
        scalar_op = aten.pow.Tensor_Scalar if base == "pow" else tensor_op
        if base in ("maximum", "minimum") and overload != "List":
            return None
        if overload == "List":
            return lambda g, i: call(g, tensor_op, args[0][i], args[1][i], **alpha)
        if overload == "Scalar":
            return lambda g, i: call(g, scalar_op, args[0][i], args[1], **alpha)
        if overload == "ScalarList":
            return lambda g, i: call(g, scalar_op, args[0][i], args[1][i], **alpha)
        if overload == "Tensor":
            return lambda g, i: call(g, tensor_op, args[0][i], args[1], **alpha)
        return None
    if base in _UNARY and overload == "default" and hasattr(aten, base):
        op = getattr(aten, base).default
        return lambda g, i: call(g, op, args[0][i])
    if base in ("addcmul", "addcdiv") and overload in ("Scalar", "ScalarList"):
        value = kwargs.get("value", args[3] if len(args) > 3 else 1)

        def element(g, i):
            v = value[i] if overload == "ScalarList" else value
            # self + value * t1 / t2 (or * t2), in ATen's order of operations.
            t = args[1][i] if v == 1 else call(g, aten.mul.Tensor, args[1][i], v)
            t = call(g, aten.div.Tensor if base == "addcdiv" else aten.mul.Tensor, t, args[2][i])
            return call(g, aten.add.Tensor, args[0][i], t)
        return element
    if base == "lerp" and overload == "Scalar":
        w = args[2] if len(args) > 2 else kwargs["weight"]
        return lambda g, i: call(g, aten.add.Tensor, args[0][i],
                                 call(g, aten.mul.Tensor, call(g, aten.sub.Tensor, args[1][i], args[0][i]), w))
    return None


def expand_foreach(gm):
    """Rewrites gm's functional _foreach_* calls in place; returns how many it expanded."""
    import torch
    aten = torch.ops.aten
    expanded = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        packet = node.target.overloadpacket.__name__
        if not packet.startswith("_foreach_") or packet.endswith("_"):
            continue
        users = list(node.users)
        if not all(u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int)
                   for u in users):
            continue
        elements = _first_list(node.args)
        build = _builder(aten, packet[len("_foreach_"):], node.target._overloadname, node.args, node.kwargs)
        if build is None or elements is None:
            continue
        with gm.graph.inserting_before(node):
            new = [build(gm.graph, i) for i in range(len(elements))]
        for u in users:
            u.replace_all_uses_with(new[u.args[1]])
            gm.graph.erase_node(u)
        gm.graph.erase_node(node)
        expanded += 1
    if expanded:
        gm.graph.lint()
        gm.recompile()
    return expanded
