"""Induction heads in SmolLM2, with more random sets and text seeds than the chapter can afford.

The chapter book/11_induction_heads.md measures one set of random texts (seed 0) and two random
sets of heads. This script repeats its measurements (not run by the build):

* for each text seed: the loss on the first copy and on the repeat, the top induction heads and
  their scores, and the chance level;
* on seed 0: the repeat's loss without the top 1, 3 and 6 induction heads, against many random
  sets of as many heads (drawn from the heads that are neither top induction heads nor early
  previous-token heads), with the first copy's loss too;
* on seed 0: the top induction head's score without the previous-token heads before the first
  induction layer, against random sets of as many heads from the same layers.

Run from the repository root:  .venv/bin/python benchmarks/bench_induction.py
Writes benchmarks/results/bench_induction.txt and .json.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the chapter: one BLAS thread

import argparse
import json
import platform
import resource
import time
from pathlib import Path

import numpy as np

from mha import heads
from mha.models import smollm2

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2], help="seeds of the random texts")
    parser.add_argument("--texts", type=int, default=8, help="texts per seed")
    parser.add_argument("--n", type=int, default=50, help="tokens per copy")
    parser.add_argument("--draws", type=int, default=12, help="random sets of 6 heads")
    parser.add_argument("--small-draws", type=int, default=4, help="random sets of 1 and of 3 heads")
    parser.add_argument("--controls", type=int, default=8, help="random sets for the previous-token test")
    return parser.parse_args(argv)


def texts(lm, seed, B, n):
    first = np.random.default_rng(seed).integers(0, lm.vocab_size, size=(B, n))
    return np.concatenate([first, first], axis=1)  # (B, 2n)


def measure(lm, ids, n, remove=()):
    """Induction scores (L, h), previous-token mass (L, h), loss on the first copy and on the repeat."""
    run = lm.run(ids, remove=remove, keep_attention=True)
    nll = lm.run_nll(run)
    A = np.stack(run.attentions, axis=1)  # (B, L, h, T, T)
    return (heads.induction_scores(A, n), heads.previous_token_mass(A).mean(axis=0),
            float(nll[:, :n - 1].mean()), float(nll[:, n:].mean()))


def draw_sets(pool, size, count, seed):
    rng = np.random.default_rng(seed)
    return [[pool[j] for j in rng.choice(len(pool), size, replace=False)] for _ in range(count)]


def pairs(ps):
    return [[int(l), int(i)] for l, i in ps]


def main(argv=None):
    args = parse_args(argv)
    start, cpu_start = time.perf_counter(), time.process_time()
    lm = smollm2.load()
    out = {"model": "SmolLM2-135M-Instruct (Q4_1)", "texts": args.texts, "n": args.n,
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
           "seeds": {}}
    lines = []
    for seed in args.seeds:
        ids = texts(lm, seed, args.texts, args.n)
        scores, prev, first, repeat = measure(lm, ids, args.n)
        top = heads.heads_where(scores, -1)[:6]
        chance = float(np.mean(1 / (np.arange(args.n, 2 * args.n) + 1)))
        out["seeds"][seed] = {"loss_first": first, "loss_repeat": repeat, "chance": chance,
                              "top": pairs(top), "top_scores": [float(scores[p]) for p in top]}
        lines.append(f"seed {seed}: loss first copy {first:.2f}, repeat {repeat:.2f} nats; chance {chance:.4f}; "
                     "top: " + ", ".join(f"{p} {scores[p]:.2f}" for p in top))
        if seed != args.seeds[0]:
            continue
        first_layer = min(l for l, _ in top)
        prev_heads = [p for p in heads.heads_where(prev, 0.5) if p[0] < first_layer]
        pool = [p for p in np.ndindex(lm.L, lm.h) if p not in top and p not in prev_heads]
        ablation = {}
        for k, count in ((1, args.small_draws), (3, args.small_draws), (6, args.draws)):
            _, _, f_top, r_top = measure(lm, ids, args.n, top[:k])
            random = [measure(lm, ids, args.n, s)[2:] for s in draw_sets(pool, k, count, seed=100 + k)]
            rep = [r for _, r in random]
            ablation[k] = {"top": {"first": f_top, "repeat": r_top},
                           "random": [{"first": f, "repeat": r} for f, r in random]}
            lines.append(f"  without the top {k}: repeat {r_top:.2f} (first copy {f_top:.2f}); {count} random sets "
                         f"of {k}: repeat {min(rep):.2f} to {max(rep):.2f} (median {np.median(rep):.2f}), "
                         f"{sum(r >= r_top for r in rep)} of {count} at least as bad")
        early = [p for p in np.ndindex(first_layer, lm.h) if p not in prev_heads]
        tl, ti = top[0]
        sc_off, _, f_off, r_off = measure(lm, ids, args.n, prev_heads)
        controls = [measure(lm, ids, args.n, s) for s in draw_sets(early, len(prev_heads), args.controls, seed=7)]
        ctl_top = [float(c[0][tl, ti]) for c in controls]
        ctl_rep = [c[3] for c in controls]
        out["previous_token_test"] = {
            "removed": pairs(prev_heads), "top_score": float(scores[tl, ti]), "top_score_without": float(sc_off[tl, ti]),
            "first_without": f_off, "repeat_without": r_off,
            "controls": [{"top_score": s, "repeat": r} for s, r in zip(ctl_top, ctl_rep)]}
        out["ablation"] = ablation
        lines.append(f"  without the previous-token heads {prev_heads} (layers < {first_layer}): top head {(tl, ti)} "
                     f"{scores[tl, ti]:.2f} -> {sc_off[tl, ti]:.2f}, repeat {r_off:.2f}, first copy {f_off:.2f}")
        lines.append(f"  {args.controls} random sets of {len(prev_heads)} heads from the same layers: top head "
                     f"{min(ctl_top):.2f} to {max(ctl_top):.2f}, repeat {min(ctl_rep):.2f} to {max(ctl_rep):.2f}")
    out["seconds"] = round(time.perf_counter() - start, 1)
    out["cpu_seconds"] = round(time.process_time() - cpu_start, 1)
    out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    lines.append(f"whole run {out['seconds']} s ({out['cpu_seconds']} s of CPU), peak memory {out['peak_mb']} MB")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_induction.json").write_text(json.dumps(out) + "\n")
    (RESULTS / "bench_induction.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
