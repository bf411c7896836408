"""Benchmarks for the costs chapter, at full size (not run by the book build).

Prints, in one run on this machine:

1. one layer at GPT-2 small sizes (T = 1024, d = 768, h = 12, float32): the
   batched ``mha.multi_head_attention`` against a loop over heads, and against
   ``torch.nn.MultiheadAttention`` on the CPU (target: within 1.5x of PyTorch);
2. peak memory of ``mha.attention_chunked`` against the plain
   ``mha.scaled_dot_product_attention`` at T = 4096 and 16384, one head of
   width 64 in float32 (target: chunked <= 10% of plain at T = 16384, equal outputs).

Run from the repository root:  .venv/bin/python benchmarks/bench_costs.py
Needs about 6 GB of free memory for the plain attention at T = 16384.
"""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Benchmarks for the costs chapter, at full size.")
    parser.add_argument("--repeat", type=int, default=7, help="timing rounds (the best is kept)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for NumPy's BLAS and for torch (default: the libraries' own choice)")
    parser.add_argument("--skip-memory", action="store_true", help="skip the peak-memory part")
    return parser.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else parse_args([])
if ARGS.threads:  # must happen before NumPy is imported
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import gc  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402

import numpy as np  # noqa: E402

import mha  # noqa: E402
from mha.costs import attention_flops  # noqa: E402
from mha.timing import best_times, multi_head_attention_loop, peak_bytes  # noqa: E402


def gpt2_layer(T, d, h, seed=0):
    """Random float32 input and weights of one layer (no biases)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d)).astype(np.float32)
    W = [(rng.normal(size=(d, d)) / math.sqrt(d)).astype(np.float32) for _ in range(4)]
    return X, W


def torch_module(W, d, h):
    """``torch.nn.MultiheadAttention`` holding our weights (torch stores W transposed)."""
    import torch

    module = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True)
    W_Q, W_K, W_V, W_O = (torch.from_numpy(np.ascontiguousarray(w)) for w in W)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T], dim=0))  # (3d, d)
        module.out_proj.weight.copy_(W_O.T)
    return module.eval()


def lean_layer(X, W_Q, W_K, W_V,  # same arguments as mha.multi_head_attention
               W_O, h):
    """A sketch of a leaner path for the core (NOT library code; unchecked, no mask, g = h).

    Three changes against ``mha.multi_head_attention``: scale Q (T x d) instead of the
    scores (h x T x T); run the softmax in place in the score buffer, so the layer allocates
    one h x T x T array instead of four; skip ``np.repeat`` when every query head has its own
    key/value head. It returns what ``multi_head_attention`` returns: (Y, A).
    """
    T, d = X.shape
    d_k = W_Q.shape[1] // h
    Q = (X @ W_Q) * (1.0 / math.sqrt(d_k))  # (T, d) -> (T, h*d_k), scaled once here
    K, V = X @ W_K, X @ W_V  # (T, d) -> (T, h*d_k)
    Q, K, V = (Z.reshape(T, h, d_k).swapaxes(0, 1) for Z in (Q, K, V))  # -> (h, T, d_k)
    A = Q @ K.swapaxes(-1, -2)  # (h, T, d_k) @ (h, d_k, T) -> (h, T, T), the only T x T buffer
    A -= A.max(axis=-1, keepdims=True)
    np.exp(A, out=A)
    A /= A.sum(axis=-1, keepdims=True)
    Z = A @ V  # (h, T, T) @ (h, T, d_k) -> (h, T, d_k)
    return Z.swapaxes(0, 1).reshape(T, h * d_k) @ W_O, A  # (T, h*d_k) @ (h*d_k, d)


def speed(T, d, h, repeat):
    import torch

    if ARGS.threads:
        torch.set_num_threads(ARGS.threads)

    X, W = gpt2_layer(T, d, h)
    Y, A = mha.multi_head_attention(X, *W, h=h)
    Y_lean, A_lean = lean_layer(X, *W, h)
    assert np.allclose(Y_lean, Y, atol=1e-5) and np.allclose(A_lean, A, atol=1e-6)

    module = torch_module(W, d, h)
    x = torch.from_numpy(X)[None]  # (1, T, d)
    with torch.inference_mode():
        y_torch, a_torch = module(x, x, x, need_weights=True, average_attn_weights=False)
        runs = {  # every contender takes a turn in each round (see mha.timing.best_times)
            "mha": lambda: mha.multi_head_attention(X, *W, h=h),
            "loop": lambda: multi_head_attention_loop(X, *W, h),
            "lean": lambda: lean_layer(X, *W, h),
            "matmul": lambda: X @ W[0],
            "torch default call (weights averaged over heads)": lambda: module(x, x, x),
            "torch need_weights=False (fused kernel)": lambda: module(x, x, x, need_weights=False),
            "torch per-head weights, like mha": lambda: module(x, x, x, need_weights=True,
                                                                 average_attn_weights=False),
        }
        t = best_times(runs, repeat=repeat)
    t_batched, t_loop, t_lean, t_matmul = t["mha"], t["loop"], t["lean"], t["matmul"]
    t_torch = {name[len("torch "):]: v for name, v in t.items() if name.startswith("torch ")}
    err_y = float(np.abs(y_torch[0].numpy() - Y).max())
    err_a = float(np.abs(a_torch[0].numpy() - A).max())

    flops = attention_flops(T, d, h).total
    mm_flops = 2 * T * d * d
    print(f"== One attention layer, T={T}, d={d}, h={h}, float32, "
          f"BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}, "
          f"torch threads: {torch.get_num_threads()} ==")
    print(f"  output dtype of mha: {Y.dtype}; max |mha - torch|: output {err_y:.2e}, weights {err_a:.2e}")
    print(f"  {'mha.multi_head_attention (batched)':46s} {t_batched * 1e3:8.1f} ms  "
          f"{flops / t_batched / 1e9:6.1f} GFLOP/s")
    print(f"  {'loop over heads (mha.timing)':46s} {t_loop * 1e3:8.1f} ms  "
          f"loop / batched = {t_loop / t_batched:.2f}")
    print(f"  {'plain (T, d) @ (d, d) matmul, the bound':46s} {t_matmul * 1e3:8.1f} ms  "
          f"{mm_flops / t_matmul / 1e9:6.1f} GFLOP/s")
    for name, t in t_torch.items():
        print(f"  {'torch.nn.MultiheadAttention, ' + name:46s} {t * 1e3:8.1f} ms  "
              f"mha / torch = {t_batched / t:.2f}")
    print(f"  {'sketch of a leaner core path (lean_layer)':46s} {t_lean * 1e3:8.1f} ms  "
          f"lean / torch = {t_lean / t_torch[next(iter(t_torch))]:.2f} (default call), "
          f"{t_lean / t_torch['need_weights=False (fused kernel)']:.2f} (fused), "
          f"lean / mha = {t_lean / t_batched:.2f}")
    print()


def memory(Ts, d_k, block):
    print(f"== Peak memory (tracemalloc), one head, d_k={d_k}, float32, block={block} ==")
    print(f"  {'T':>6s} {'plain MiB':>10s} {'chunked MiB':>12s} {'ratio':>7s} {'max |diff|':>11s}")
    for T in Ts:
        rng = np.random.default_rng(T)
        Q, K, V = (rng.normal(size=(T, d_k)).astype(np.float32) for _ in range(3))
        (plain, _), p_plain = peak_bytes(mha.scaled_dot_product_attention, Q, K, V)
        gc.collect()
        lean, p_lean = peak_bytes(mha.attention_chunked, Q, K, V, block=block)
        diff = float(np.abs(plain - lean).max())
        print(f"  {T:6d} {p_plain / 2**20:10.1f} {p_lean / 2**20:12.1f} {p_lean / p_plain:7.2%} {diff:11.2e}")
        del plain, lean
        gc.collect()
    print()


def main():
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, "
          f"load average {os.getloadavg()[0]:.1f} (other jobs share the cores)")
    speed(T=1024, d=768, h=12, repeat=ARGS.repeat)
    if not ARGS.skip_memory:
        memory(Ts=(4096, 16384), d_k=64, block=64)
    return 0


if __name__ == "__main__":
    sys.exit(main())
