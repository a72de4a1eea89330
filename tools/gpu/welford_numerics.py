#!/usr/bin/env python3
"""The CUDA row kernels' Welford arithmetic replayed in f32 with numpy (no GPU): a row of 4096
values over 128 threads of 32 (four groups of 8), each thread's partial by per-group two-pass
merges ($TOROID_CUDA_WELFORD_SHIFTED=0) or by the default sums of offsets from its first value, then
the block's pairwise merges (weights as exact quotients); the relative error of the mean and M2
against f64, on rows chosen to hurt (a large offset, an outlier as the shift), RESULTS.md 37h;
and rows holding an infinity with and without the prelude's rules for them, RESULTS.md 38i. (A
block merge of the means as a/2 + b/2 was replayed too and dropped: RESULTS.md 40g, 41a.)

    python3 tools/gpu/welford_numerics.py
"""
import numpy as np

f32 = np.float32


INF_RULES = True  # the prelude's handling of infinite values (t_welford_mean, the finite shift)


def merge(a, b):
    """Chan's merge of (n, mean, M2) pairs, rounding as the f32 kernel does; with an infinite
    side the means are added (t_welford_mean)."""
    n = f32(a[0] + b[0])
    d = f32(b[1] - a[1])
    fb = f32(b[0] / n)
    if INF_RULES and (np.isinf(a[1]) or np.isinf(b[1])):
        mean = f32(a[1] + b[1])
    else:
        mean = f32(a[1] + d * fb)
    return n, mean, f32(f32(a[2] + b[2]) + f32(f32(d * d) * a[0]) * fb)


def group(x):
    """t_welford_group: a group's own mean, then its M2."""
    s = f32(0)
    for v in x:
        s = f32(s + v)
    m = f32(s * f32(1.0 / len(x)))
    m2 = f32(0)
    for v in x:
        m2 = f32(m2 + f32(f32(v - m) * f32(v - m)))
    return f32(len(x)), m, m2


def thread_groups(vals):
    w = group(vals[:8])
    for g in range(8, len(vals), 8):
        w = merge(w, group(vals[g:g + 8]))
    return w


def thread_shifted(vals):
    """t_shift_add_group over the thread's values, then t_welford_from_shift."""
    k, s1, s2 = vals[0], f32(0), f32(0)
    if INF_RULES and not np.isfinite(k):
        k = f32(0)
    for v in vals:
        f = f32(v - k)
        s1 = f32(s1 + f)
        s2 = f32(s2 + f32(f * f))
    n = f32(len(vals))
    m = f32(s1 / n)
    m2 = f32(s2 - f32(s1 * m))
    return n, f32(k + m), m2 if not m2 < 0 else f32(0)  # a NaN M2 stays NaN


def block(parts):
    while len(parts) > 1:
        parts = [merge(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
    return parts[0]


def main():
    rng = np.random.default_rng(0)
    rows = {
        "N(0, 1)": rng.standard_normal(4096),
        "N(1000, 1)": 1000 + rng.standard_normal(4096),
        "N(1e4, 0.01)": 1e4 + 0.01 * rng.standard_normal(4096),
        "1e4 first, then N(0, 1)": np.concatenate([[1e4], rng.standard_normal(4095)]),
        "1e4 first in every thread": np.where(np.arange(4096) % 32 == 0, 1e4, rng.standard_normal(4096)),
        "integers -3..3": rng.integers(-3, 4, 4096).astype(np.float64),
    }
    def errors(x, fn):
        """The block's mean and M2 from thread partials `fn`, as errors relative to f64's."""
        exact = x.astype(np.float64)
        mean = exact.mean()
        m2 = ((exact - mean) ** 2).sum()
        _, got_mean, got_m2 = block([fn(list(x[t * 32:(t + 1) * 32])) for t in range(128)])
        return f"{abs(got_mean - mean) / abs(mean):.1e} | {abs(got_m2 - m2) / m2:.1e}"

    global INF_RULES
    print("| row | thread partial | mean rel. error | M2 rel. error |")
    print("|---|---|---|---|")
    for name, x in rows.items():
        for label, fn in (("groups of 8", thread_groups), ("shifted sums (default)", thread_shifted)):
            print(f"| {name} | {label} | {errors(x.astype(np.float32), fn)} |")
    # Rows holding an infinity: eager's mean is inf (NaN for both signs), its variance NaN.
    x = rng.standard_normal(4096).astype(np.float32)
    inf_rows = {"inf first": np.concatenate([[np.inf], x[1:]]), "inf last": np.concatenate([x[1:], [np.inf]]),
                "inf first, -inf last": np.concatenate([[np.inf], x[2:], [-np.inf]])}
    print("\n| row | thread partial | infinity rules | mean | M2 | eager's mean |")
    print("|---|---|---|---|---|---|")
    with np.errstate(invalid="ignore", over="ignore"):
        for name, x in inf_rows.items():
            x = x.astype(np.float32)
            for rules in (False, True):
                INF_RULES = rules
                for label, fn in (("groups of 8", thread_groups), ("shifted sums (default)", thread_shifted)):
                    _, got_mean, got_m2 = block([fn(list(x[t * 32:(t + 1) * 32])) for t in range(128)])
                    print(f"| {name} | {label} | {'on' if rules else 'off'} | {got_mean} | {got_m2} | {x.mean()} |")


if __name__ == "__main__":
    main()
