"""Induction heads in SmolLM2, with more random sets and text seeds than the chapter can afford.

The chapter book/11_induction_heads.md measures one set of random texts (seed 0), a few random
sets of heads and four passages of The Tempest. This script repeats its measurements (not run by
the build):

* for each text seed: the loss on the first copy and on the repeat, the top prefix-matching
  (induction) heads and their scores, the chance level, and every head's copying score
  (:func:`mha.induction.copying_score`, mean over the texts);
* on seed 0, under zero and under mean ablation: the repeat's loss without the top 1, 3 and 6
  heads, against random sets of as many heads drawn from the *same layers* (one other head from
  the layer of each head it stands in for; never a top head or an early previous-token head),
  with the first copy's loss too;
* on seed 0, under both methods: the top head's prefix-matching score and the repeat's loss
  without the previous-token heads before the first induction layer, against random sets drawn
  from the same layers as those heads;
* on passages of The Tempest, each read twice: the loss of the first and the second reading, intact
  and without the previous-token head (16, 0), the top 6 heads, or another head of layer 16.

Run from the repository root:  nice .venv/bin/python benchmarks/bench_induction.py
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

from mha import heads, induction
from mha.models import smollm2, texts

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("zero", "mean")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2], help="seeds of the random texts")
    parser.add_argument("--texts", type=int, default=8, help="texts per seed")
    parser.add_argument("--n", type=int, default=50, help="tokens per copy")
    parser.add_argument("--draws", type=int, default=12, help="random sets of 6 heads")
    parser.add_argument("--small-draws", type=int, default=4, help="random sets of 1 and of 3 heads")
    parser.add_argument("--controls", type=int, default=8, help="random sets for the previous-token test")
    parser.add_argument("--passages", type=int, default=8, help="passages of The Tempest")
    parser.add_argument("--passage-tokens", type=int, default=80, help="tokens per passage (read twice)")
    return parser.parse_args(argv)


def random_texts(lm, seed, B, n):
    first = np.random.default_rng(seed).integers(0, lm.vocab_size, size=(B, n))
    return np.concatenate([first, first], axis=1)  # (B, 2n)


def tempest_passages(lm, B, n):
    """``B`` passages of ``n`` tokens, evenly spaced through the play, each read twice: (B, 2n)."""
    ids = lm.encode(texts.tempest())
    starts = np.linspace(0, len(ids) - n, B + 2).astype(int)[1:-1]
    return np.stack([np.concatenate([ids[s:s + n], ids[s:s + n]]) for s in starts])


def measure(lm, ids, n, remove=(), method="zero"):
    """Prefix-matching scores (L, h), previous-token mass (L, h), loss on the first copy and on the repeat."""
    run = lm.run(ids, remove=remove, keep_attention=True, method=method)
    nll = lm.run_nll(run)
    A = np.stack(run.attentions, axis=1)  # (B, L, h, T, T)
    return (heads.induction_scores(A, n), heads.previous_token_mass(A).mean(axis=0),
            float(nll[:, :n - 1].mean()), float(nll[:, n:].mean()))


def readings(lm, ids, n, remove=(), method="zero"):
    """Loss of the first and of the second reading of each passage."""
    nll = lm.nll(ids, remove=remove, method=method)
    return float(nll[:, :n - 1].mean()), float(nll[:, n:].mean())


def layer_matched(pool, like, count, seed):
    """``count`` sets that hold, for each head of ``like``, another head of the same layer from ``pool``."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(count):
        chosen = []
        for layer, _ in like:
            left = [p for p in pool if p[0] == layer and p not in chosen]
            chosen.append(left[rng.integers(len(left))])
        sets.append(chosen)
    return sets


def pairs(ps):
    return [[int(l), int(i)] for l, i in ps]


def span(values):
    return f"{min(values):.2f} to {max(values):.2f} (median {np.median(values):.2f})"


def main(argv=None):
    args = parse_args(argv)
    start, cpu_start = time.perf_counter(), time.process_time()
    lm = smollm2.load()
    out = {"model": "SmolLM2-135M-Instruct (Q4_1)", "texts": args.texts, "n": args.n,
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
           "seeds": {}}
    lines = []
    for seed in args.seeds:
        ids = random_texts(lm, seed, args.texts, args.n)
        scores, prev, first, repeat = measure(lm, ids, args.n)
        copying = induction.copying_scores(lm, ids).mean(axis=0)  # (L, h)
        top = heads.heads_where(scores, -1)[:6]
        rank = {p: i + 1 for i, p in enumerate(heads.heads_where(copying, float(copying.min()) - 1))}
        chance = float(np.mean(1 / (np.arange(args.n, 2 * args.n) + 1)))
        out["seeds"][seed] = {"loss_first": first, "loss_repeat": repeat, "chance": chance,
                              "top": pairs(top), "top_scores": [float(scores[p]) for p in top],
                              "copying": copying.tolist()}
        lines.append(f"seed {seed}: loss first copy {first:.2f}, repeat {repeat:.2f} nats; chance {chance:.4f}; "
                     "top: " + ", ".join(f"{p} {scores[p]:.2f}" for p in top))
        lines.append("  copying scores of the top 6 (rank of 270): "
                     + ", ".join(f"{p} {copying[p]:+.3f} ({rank[p]})" for p in top)
                     + f"; median head {np.median(copying):+.4f}; highest "
                     + ", ".join(f"{p} {copying[p]:.2f}" for p in heads.heads_where(copying, float(copying.min()) - 1)[:3]))
        if seed != args.seeds[0]:
            continue
        first_layer = min(l for l, _ in top)
        prev_heads = [p for p in heads.heads_where(prev, 0.5) if p[0] < first_layer]
        pool = [p for p in np.ndindex(lm.L, lm.h) if p not in top and p not in prev_heads]
        tl, ti = top[0]
        out["ablation"], out["previous_token_test"] = {}, {"removed": pairs(prev_heads),
                                                          "top_score": float(scores[tl, ti])}
        for method in METHODS:
            ablation = {}
            for k, count in ((1, args.small_draws), (3, args.small_draws), (6, args.draws)):
                _, _, f_top, r_top = measure(lm, ids, args.n, top[:k], method)
                sets = layer_matched(pool, top[:k], count, seed=100 + k)
                random = [measure(lm, ids, args.n, s, method)[2:] for s in sets]
                rep = [r for _, r in random]
                ablation[k] = {"top": {"first": f_top, "repeat": r_top},
                               "random": [{"heads": pairs(s), "first": f, "repeat": r}
                                          for s, (f, r) in zip(sets, random)]}
                lines.append(f"  {method}: without the top {k}: repeat {r_top:.2f} (first copy {f_top:.2f}); "
                             f"{count} layer-matched random sets of {k}: repeat {span(rep)}, "
                             f"{sum(r >= r_top for r in rep)} of {count} at least as bad")
            out["ablation"][method] = ablation
            sc_off, _, f_off, r_off = measure(lm, ids, args.n, prev_heads, method)
            sets = layer_matched(pool, prev_heads, args.controls, seed=7)
            controls = [measure(lm, ids, args.n, s, method) for s in sets]
            ctl_top = [float(c[0][tl, ti]) for c in controls]
            ctl_rep = [c[3] for c in controls]
            out["previous_token_test"][method] = {
                "top_score_without": float(sc_off[tl, ti]), "first_without": f_off, "repeat_without": r_off,
                "controls": [{"heads": pairs(s), "top_score": a, "repeat": r}
                             for s, a, r in zip(sets, ctl_top, ctl_rep)]}
            lines.append(f"  {method}: without the previous-token heads {prev_heads} (layers < {first_layer}): top "
                         f"head {(tl, ti)} {scores[tl, ti]:.2f} -> {sc_off[tl, ti]:.2f}, repeat {r_off:.2f}, "
                         f"first copy {f_off:.2f}")
            lines.append(f"  {method}: {args.controls} random sets of {len(prev_heads)} heads from the same layers: "
                         f"top head {span(ctl_top)}, repeat {span(ctl_rep)}")
        # The Tempest, each passage read twice
        n = args.passage_tokens
        P = tempest_passages(lm, args.passages, n)
        first, second = readings(lm, P, n)
        tem = {"passages": args.passages, "tokens": n, "intact": {"first": first, "second": second}}
        lines.append(f"tempest, {args.passages} passages of {n} tokens read twice: first reading {first:.2f}, "
                     f"second {second:.2f} nats")
        others16 = [(16, i) for i in range(lm.h) if (16, i) not in prev_heads][:4]
        for name, remove in [("16,0", [(16, 0)]), ("top6", top),
                             *[(f"{l},{i}", [(l, i)]) for l, i in others16]]:
            tem[name] = {}
            for method in METHODS:
                f, s = readings(lm, P, n, remove, method)
                tem[name][method] = {"first": f, "second": s}
                lines.append(f"  {method}: without {name}: first reading {f:.2f}, second {s:.2f}")
        out["tempest"] = tem
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
