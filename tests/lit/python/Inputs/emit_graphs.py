"""Prints the .tir text python/toroid emits for one of a few traced graphs (argv[1])."""
import os
import sys

import torch
from torch.fx.experimental.proxy_tensor import make_fx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "python"))
from toroid.fx_to_tir import graph_to_tir  # noqa: E402

F = torch.nn.functional
torch.manual_seed(0)


def linear_relu(x, w, b):
    return torch.relu(F.linear(x, w, b))


def norm_max(x):
    return F.layer_norm(x, (8,)).sum(1)


def split_view(x):
    a, b = torch.split(x, [2, 6], 1)
    return a.exp(), b.t()


which = sys.argv[1]
if which == "linear":
    args = [torch.randn(4, 8), torch.randn(16, 8), torch.randn(16)]
    gm = make_fx(linear_relu)(*args)
elif which == "symbolic":
    args = [torch.randn(5, 8)]
    gm = make_fx(norm_max, tracing_mode="symbolic")(*args)
    args = None
else:
    args = [torch.randn(3, 8)]
    gm = make_fx(split_view)(*args)
sys.stdout.write(graph_to_tir(gm, args, name=which))
