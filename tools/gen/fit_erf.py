#!/usr/bin/env python3
"""Fits the rational erf of the CPU kernel prelude (t_erf in src/codegen/cpu/kernel_prelude.h):
erf(x) = x P(x^2) / Q(x^2) on [0, X] (X = 3.92: past it erf rounds to 1 in float), P of degree
M, Q of degree N with Q(0) = 1, by least squares on the linearized relative error
P(t) - f(t) Q(t) (f = erf(sqrt t) / sqrt t), reweighted by 1 / (f Q) each round and by the last
round's error (Lawson), keeping the round with the smallest maximum relative error. Prints
that error, the coefficients (lowest degree first) and the largest error in ulp of the
function evaluated in float32 (Horner, one rounding a step) over [-4.5, 4.5].

    python3 tools/gen/fit_erf.py [M N X]        (numpy; defaults 6 4 3.92)
"""
import math
import sys

import numpy as np


def horner(coeffs, t):
    r = np.zeros_like(t)
    for c in reversed(coeffs):
        r = r * t + c
    return r


def horner32(coeffs, t):
    r = np.zeros_like(t, dtype=np.float32)
    for c in reversed(coeffs):
        r = (r * t + np.float32(c)).astype(np.float32)
    return r


def fit(m, n, x_max, rounds=200):
    xs = np.unique(np.concatenate([np.linspace(0, x_max, 20000), np.linspace(0, 0.1, 2000)]))
    ts = xs * xs
    f = np.array([math.erf(x) / x if x > 0 else 2 / math.sqrt(math.pi) for x in xs])
    powers_p = np.vstack([ts**k for k in range(m + 1)]).T
    powers_q = -np.vstack([f * ts**k for k in range(1, n + 1)]).T
    a = np.hstack([powers_p, powers_q])
    weight, lawson, best = 1 / f**2, np.ones_like(f), None
    for _ in range(rounds):
        sw = np.sqrt(weight * lawson)
        sol, *_ = np.linalg.lstsq(a * sw[:, None], f * sw, rcond=None)
        p, q = sol[:m + 1], np.concatenate([[1.0], sol[m + 1:]])
        rel = (horner(p, ts) / horner(q, ts) - f) / f
        err = np.max(np.abs(rel))
        if best is None or err < best[0]:
            best = (err, p, q)
        weight = 1 / (f * horner(q, ts))**2
        lawson = lawson * (np.abs(rel) / err + 1e-3)
        lawson /= lawson.mean()
    return best


def float32_ulps(p, q, x_max):
    xs = np.linspace(-4.5, 4.5, 2000001).astype(np.float32)
    t = (xs * xs).astype(np.float32)
    y = (xs * (horner32(p, t) / horner32(q, t)).astype(np.float32)).astype(np.float32)
    y = np.where(np.abs(xs) >= np.float32(x_max), np.sign(xs), y).astype(np.float32)
    ref = np.array([math.erf(float(v)) for v in xs])
    ulp = np.abs(y.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    ulp[ref == 0] = 0
    return ulp.max(), xs[np.argmax(ulp)]


def main():
    m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (6, 4)
    x_max = float(sys.argv[3]) if len(sys.argv) > 3 else 3.92
    err, p, q = fit(m, n, x_max)
    print(f"max relative error (exact arithmetic): {err:.3g}")
    print("P:", ", ".join(np.format_float_scientific(np.float32(c), unique=True) for c in p))
    print("Q:", ", ".join(np.format_float_scientific(np.float32(c), unique=True) for c in q))
    ulps, at = float32_ulps(p, q, x_max)
    print(f"max error evaluated in float32: {ulps:.2f} ulp at {at}")


if __name__ == "__main__":
    main()
