"""Process-wide settings of the Python frontend.

    import toroid
    toroid.config.debug = True            # as TOROID_DEBUG=1: a debug directory per compile
    toroid.config.debug_dir = "/tmp/dbg"  # where (default: $TOROID_DEBUG_DIR, else ./toroid_debug)

    toroid.config.attention_max_score_bytes = 32 << 20  # attention as matmuls up to this size

A debug directory holds the graph after each pass, the loop IR, the Wrapper IR, the kernels,
the memory plan, the provenance map, the compile record and report.html (docs/debugging.md).
An explicit dump_dir (compile_graph's argument, or torch.compile's options={"dump_dir": ...})
takes precedence.
"""
from __future__ import annotations

import os
from typing import Optional

debug: bool = False
debug_dir: Optional[str] = None
# scaled_dot_product_attention compiles as matmul + softmax + matmul where its fp32 score matrix
# (batch x heads x queries x keys) is at most this many bytes; larger ones run toroid's fused
# attention kernel in an inference graph and PyTorch's fused kernel in a training graph
# (attention.py).
attention_max_score_bytes: int = 32 << 20


def debug_root(dump_dir: Optional[str] = None) -> Optional[str]:
    """The directory compiles write their debug directories in, or None (then TOROID_DEBUG=1 in
    the environment still turns them on, in the library)."""
    if dump_dir:
        return dump_dir
    if not isinstance(debug, bool):
        raise TypeError("toroid.config.debug must be True or False, got %r" % (debug,))
    if debug:
        return debug_dir or os.environ.get("TOROID_DEBUG_DIR") or "toroid_debug"
    return None
