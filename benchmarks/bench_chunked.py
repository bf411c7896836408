"""Benchmarks behind chapter 08's hardware sections, at sizes too slow for the book build.

Prints, on one thread:

1. this machine's balance: FLOP/s of a float32 matrix product (n = 1024 and 2048), bytes/s of a
   streaming copy (64 and 256 MiB), their ratio, beside the A100's published figures;
2. the loop over heads against the batched layer (``mha.attention.multi_head_attention_loop``
   against ``mha.multi_head_attention``), h = 64, d = 256, T from 16 to 1024 (the chapter stops
   at 512 to stay within its time budget);
3. causal ``mha.attention_chunked`` with and without the skip of fully masked key blocks, one head
   of width 64 in float64, T in {1024, 2048, 4096}, blocks of 64 and 128: tiles skipped
   (``mha.chunked.causal_tiles``) and time saved.

Every time is the median of ``--repeat`` rounds in which the contenders take turns.

Run from the repository root:  .venv/bin/python benchmarks/bench_chunked.py

Output recorded on the build machine, 1 December 2026 (2 shared cores, load average about 6 from
other jobs, so the times are noisy; run took 47 s of wall time):

    machine, one thread: n=1024: 58.0 GFLOP/s; n=2048: 52.2 GFLOP/s; copy 64 MiB: 11.6 GB/s; copy 256 MiB: 8.8 GB/s
    this machine: 6.0 FLOP per byte; NVIDIA A100 (80 GB SXM, bfloat16 dense): 153.0 FLOP per byte
    loop / batched, h = 64, d = 256:
      T =   16: batched    0.80 ms, loop    7.36 ms, ratio 9.17
      T =   32: batched    0.99 ms, loop    7.93 ms, ratio 7.98
      T =   64: batched    1.86 ms, loop   13.13 ms, ratio 7.07
      T =  128: batched   10.51 ms, loop   19.25 ms, ratio 1.83
      T =  256: batched   50.34 ms, loop   62.09 ms, ratio 1.23
      T =  512: batched  286.87 ms, loop  272.61 ms, ratio 0.95
      T = 1024: batched 1148.91 ms, loop 1063.45 ms, ratio 0.93
    causal chunked attention, one head, d_k = 64, float64:
      T = 1024, block =  64: 120 of  256 tiles skipped (47%); skip  27.3 ms, no skip  59.2 ms: 54% saved
      T = 1024, block = 128:  28 of   64 tiles skipped (44%); skip  31.9 ms, no skip  60.4 ms: 47% saved
      T = 2048, block =  64: 496 of 1024 tiles skipped (48%); skip  95.5 ms, no skip 204.1 ms: 53% saved
      T = 2048, block = 128: 120 of  256 tiles skipped (47%); skip 137.0 ms, no skip 296.6 ms: 54% saved
      T = 4096, block =  64: 2016 of 4096 tiles skipped (49%); skip 458.3 ms, no skip 1163.7 ms: 61% saved
      T = 4096, block = 128: 496 of 1024 tiles skipped (48%); skip 397.0 ms, no skip 862.9 ms: 54% saved
"""

from __future__ import annotations

import argparse

import numpy as np
from threadpoolctl import threadpool_limits

import mha
from mha.chunked import causal_tiles
from mha.costs import A100
from mha.attention import multi_head_attention_loop
from mha.timing import copy_bytes_per_s, matmul_flops_per_s, median_times

MiB = 2**20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Chapter 08's hardware benchmarks, at full size.")
    parser.add_argument("--repeat", type=int, default=5, help="timing rounds (the median is kept)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512, 1024])
    parser.add_argument("--causal-lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 128])
    return parser.parse_args(argv)


def machine_balance(repeat):
    """This machine's FLOP/s and bytes/s at two sizes each; returns the larger-size ratio."""
    rates = {n: matmul_flops_per_s(n, repeat=repeat) for n in (1024, 2048)}
    speeds = {mib: copy_bytes_per_s(mib * MiB, repeat=repeat) for mib in (64, 256)}
    print("machine, one thread: " + "; ".join(f"n={n}: {r / 1e9:.1f} GFLOP/s" for n, r in rates.items())
          + "; " + "; ".join(f"copy {mib} MiB: {b / 1e9:.1f} GB/s" for mib, b in speeds.items()))
    ratio = rates[2048] / speeds[256]
    print(f"this machine: {ratio:.1f} FLOP per byte; {A100.name}: {A100.flop_per_byte:.1f} FLOP per byte")
    return ratio


def loop_against_batched(lengths, repeat, h=64, d=256):
    """Median times of the loop over heads and the batched layer at ``h`` heads, for each length."""
    rng = np.random.default_rng(0)
    W = [(rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32) for _ in range(4)]
    print(f"loop / batched, h = {h}, d = {d}:")
    ratios = {}
    for T in lengths:
        X = rng.standard_normal((T, d)).astype(np.float32)
        t = median_times({"batched": lambda: mha.multi_head_attention(X, *W, h=h),
                          "loop": lambda: multi_head_attention_loop(X, *W, h)}, repeat=repeat)
        ratios[T] = t["loop"] / t["batched"]
        print(f"  T = {T:4d}: batched {t['batched'] * 1e3:7.2f} ms, loop {t['loop'] * 1e3:7.2f} ms, "
              f"ratio {ratios[T]:.2f}")
    return ratios


def causal_skip(lengths, blocks, repeat, d_k=64):
    """Tiles skipped and time saved by the causal skip of ``mha.attention_chunked``."""
    print(f"causal chunked attention, one head, d_k = {d_k}, float64:")
    for T in lengths:
        rng = np.random.default_rng(T)
        Q, K, V = (rng.standard_normal((T, d_k)) for _ in range(3))
        for block in blocks:
            tiles = causal_tiles(T, block)
            skip = mha.attention_chunked(Q, K, V, block=block, causal=True)
            full = mha.attention_chunked(Q, K, V, block=block, causal=True, skip_masked=False)
            assert np.allclose(skip, full, rtol=0, atol=1e-12)
            t = median_times({"skip": lambda: mha.attention_chunked(Q, K, V, block=block, causal=True),
                              "no skip": lambda: mha.attention_chunked(Q, K, V, block=block, causal=True,
                                                                       skip_masked=False)}, repeat=repeat)
            print(f"  T = {T}, block = {block:3d}: {tiles.skipped:3d} of {tiles.total:4d} tiles skipped "
                  f"({100 * tiles.skipped / tiles.total:.0f}%); skip {t['skip'] * 1e3:5.1f} ms, "
                  f"no skip {t['no skip'] * 1e3:5.1f} ms: {100 * (1 - t['skip'] / t['no skip']):.0f}% saved")


def main(argv=None):
    args = parse_args(argv)
    with threadpool_limits(1):
        machine_balance(args.repeat)
        loop_against_batched(args.lengths, args.repeat)
        causal_skip(args.causal_lengths, args.blocks, args.repeat)


if __name__ == "__main__":
    main()
