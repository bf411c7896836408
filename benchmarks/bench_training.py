"""Chapter 06's dictionary lookup: the speed of one training step, the section's build time, and the controls.

Three parts, each run from the repository root:

    .venv/bin/python benchmarks/bench_training.py step [--repeat 200]   # NumPy step against PyTorch's
    .venv/bin/python benchmarks/bench_training.py section               # the seconds the section adds
    .venv/bin/python benchmarks/bench_training.py controls              # writes results/bench_training_controls.json

``step`` prints the milliseconds of one training step (loss, gradients, Adam) for
each head count, NumPy (``mha.training``, one model, and three seeds side by
side) against PyTorch (the same model and recipe with autograd, float32, one
thread), and their ratio.

``section`` times the training the chapter runs at build time (3 seeds x 5 head
counts, and seed 0 of the four models with d_k held at 4: h = 8 and 16 for the table,
h = 1 and 2 for the explorer), in two
worker processes as the page does, with its jobs cut to fit a core's cache
(``tr.JOB_BYTES``) and without that cut, interleaved (``--rounds``); then in one
process: wall seconds and CPU seconds, and a check that the accuracies are the same.

``controls`` runs the checks of the recipe that the page reports but does not
execute (they take minutes): four keys at d = 32 for h = 1 .. 32; one key; a peak
learning rate of 1e-3; 4x longer training; and h = 8 and 16 with d_k held at 4 on
every seed (the page trains seed 0 of them), with the accuracy of each asked key and
one head's weights on the two asked entries. ``--only NAME ...`` runs some of them and
keeps the rest of the record. It writes the record
``benchmarks/results/bench_training_controls.json`` (and a ``.txt`` summary), which
chapter 06 reads and glues from.

Measured on the book's 2-core machine (load about 1; its speed moves by 20-30 % within
minutes, so these are one run each):

* ``step`` (one model, ms per step; ``--repeat 30``): NumPy 1.03 / 0.95 / 0.93 / 0.92 /
  0.98 for h = 1, 2, 4, 8, 16 against PyTorch 4.02 / 3.88 / 3.20 / 3.78 / 5.13, a ratio
  of 0.19-0.29 (at this size PyTorch's cost per operation dominates). Three seeds side by
  side: 3.2-3.7 ms per step.
* ``section`` (``--rounds 4``, on a busy machine): 13.3-14.3 s wall, 25.5-27.2 s CPU in 2
  processes with the jobs cut at ``tr.JOB_BYTES``; 15.9-17.0 s wall, 30.4-31.0 s CPU
  without that cut; 1 process: 26.5 s wall, 25.7 s CPU. The same accuracies every time.
  Against the code before the cut (interleaved, 4 runs each, busy machine): 10.9-13.4 s
  wall against 16.5-20.8 s. Quiet machines of earlier stops: 12.7 s wall, 24.7 s CPU.
  Builds ran chapter 06 in 15.2-19.0 s, and in 20.6 s on the slowest machine of the
  last stop (myst-nb's execution time, with the kernel's start and shutdown; the build
  prints each chapter's, and ``_build/build-report.json`` keeps them).
  Since then the page trains one seed (not three) of the two fixed-d_k models of its
  table, and a run makes its step's arrays once. On a slower 2-core machine (AMD EPYC,
  1 MiB of L2 per core), ``--rounds 2``: 14.5-15.1 s wall, 28.2-29.9 s CPU cut at
  ``tr.JOB_BYTES``, 14.8-15.1 s and 28.4-29.3 s not cut; 1 process 28.8 s. There,
  one-chapter builds executed chapter 06 in 19.0 s (twice), and nbclient ran its cells in
  17.9-19.4 s, against 23.8-25.4 s for the code and page of the last stop.
* ``controls`` (3 seeds each; the record in ``results/`` has every number): four keys
  at d = 32, h = 1 .. 32: 0.32, 0.54, 1.00, 1.00, 0.33, 0.27; one key, h = 1 .. 16:
  1.00, 1.00, 1.00, 0.997, 0.68; peak lr 1e-3: 0.50, 0.62, 0.39, 0.26, 0.22; 6000
  steps, h = 1, 2, 8, 16: 0.530 (its keys 0.959 and 0.101, weights 0.50 and 0.44 on the
  two named entries), 1.000, 1.000, 0.582; d_k held at 4, h = 8 and 16: 1.000 and 1.000
  (each seed at least 0.999; ``--only fixed_dk4``, 9 s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from mha import training as tr  # noqa: E402

RESULTS = Path(__file__).parent / "results"
SEEDS = (0, 1, 2)


# ================================================================ one step, NumPy against PyTorch
def numpy_step(h, seeds, repeat):
    """Milliseconds of one step of ``mha.training`` for ``len(seeds)`` models side by side."""
    shapes = tr.param_shapes(h, 16, 16 // h, 2)
    theta = np.stack([tr.init_params(np.random.default_rng(s), shapes) for s in seeds])
    rngs = [np.random.default_rng(100 + s) for s in seeds]
    draws = [[tr.lookup_batch(rng, tr.BATCH) for rng in rngs] for _ in range(repeat)]
    batches = [tr.LookupBatch(*(np.stack([getattr(b, f) for b in step]) for f in ("keys", "values", "asked")))
               for step in draws]
    state = {}
    with threadpool_limits(1, user_api="blas"):
        start = time.perf_counter()
        for b in batches:
            _, grad = tr.loss_and_grads(theta, shapes, b, h)
            tr.adam_step(theta, grad, state, 1e-3)
    return (time.perf_counter() - start) / repeat * 1e3


def torch_step(h, repeat, d=16):
    """Milliseconds of one step of the same model written in PyTorch (autograd, torch.optim.Adam)."""
    import torch

    torch.set_num_threads(1)
    d_k = d // h
    g = torch.Generator().manual_seed(0)
    P = {"E": torch.randn(64, d, generator=g), "W_Q": torch.randn(d, d, generator=g) / 4,
         "W_K": torch.randn(d, d, generator=g) / 4, "W_V": torch.randn(d, d, generator=g) / 4,
         "W_O": torch.randn(d, d, generator=g) / 4, "R": torch.randn(2, d, 16, generator=g) / 4,
         "c": torch.zeros(2, 16)}
    for p in P.values():
        p.requires_grad_(True)
    opt = torch.optim.Adam(P.values(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    rng = np.random.default_rng(0)
    batches = [tr.lookup_batch(rng, tr.BATCH, 2) for _ in range(repeat)]
    batches = [tuple(torch.as_tensor(a) for a in (b.keys, b.values, b.asked_keys, b.answers)) for b in batches]
    start = time.perf_counter()
    for keys, values, asked_keys, answers in batches:
        B = keys.shape[0]
        X = torch.cat([P["E"][keys] + P["E"][16 + values],
                       (P["E"][32 + 16 * torch.arange(2) + asked_keys]).sum(1, keepdim=True)], dim=1)  # (B, 9, d)
        q = (X[:, -1:] @ P["W_Q"]).reshape(B, 1, h, d_k).transpose(1, 2)  # (B, h, 1, d_k)
        k = (X @ P["W_K"]).reshape(B, 9, h, d_k).transpose(1, 2)  # (B, h, 9, d_k)
        v = (X @ P["W_V"]).reshape(B, 9, h, d_k).transpose(1, 2)
        A = torch.softmax(q @ k.transpose(-1, -2) / d_k ** 0.5, dim=-1)  # (B, h, 1, 9)
        z = X[:, -1] + (A @ v).transpose(1, 2).reshape(B, d) @ P["W_O"]
        logits = z @ P["R"] + P["c"][:, None]  # (2, B, 16)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 16), answers.T.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.perf_counter() - start) / repeat * 1e3


def run_step(args):
    print(f"{'h':>3} {'numpy ms':>9} {'numpy 3 seeds ms':>17} {'torch ms':>9} {'numpy/torch':>12}")
    for h in (1, 2, 4, 8, 16):
        one, three = numpy_step(h, (0,), args.repeat), numpy_step(h, SEEDS, args.repeat)
        ref = torch_step(h, args.repeat)
        print(f"{h:>3} {one:>9.2f} {three:>17.2f} {ref:>9.2f} {one / ref:>12.2f}")


# ================================================================ the section's build time
def section_settings():
    """The training chapter 06 runs at build time (the same list as its code cell)."""
    return ([{"h": h, "seeds": SEEDS} for h in (1, 2, 4, 8, 16)]
            + [{"h": h, "d_k": 4, "seeds": SEEDS[:1]} for h in (1, 2, 8, 16)])


def timed_sweep(processes, job_bytes):
    """Wall and CPU seconds (this process and its workers) of the chapter's sweep, jobs cut at ``job_bytes``."""
    wall, cpu, children = time.perf_counter(), time.process_time(), os.times()
    results = tr.lookup_sweep(section_settings(), processes=processes, job_bytes=job_bytes)
    after = os.times()
    cpu = time.process_time() - cpu + (after.children_user - children.children_user
                                       + after.children_system - children.children_system)
    return time.perf_counter() - wall, cpu, [[r.accuracy for r in rs] for rs in results]


def run_section(args):
    """The sweep in 2 processes with the jobs cut to fit the cache, and without that cut, interleaved; then 1 process."""
    runs = [("jobs cut at tr.JOB_BYTES", 2, tr.JOB_BYTES), ("grids not cut by size", 2, math.inf)]
    seconds, accuracies = {label: [] for label, *_ in runs}, []
    for round_ in range(args.rounds):
        for label, processes, job_bytes in runs if round_ % 2 == 0 else runs[::-1]:
            wall, cpu, acc = timed_sweep(processes, job_bytes)
            seconds[label].append((wall, cpu))
            accuracies.append(acc)
            print(f"chapter 06's training, {processes} processes, {label}: {wall:.1f} s wall, {cpu:.1f} s CPU",
                  flush=True)
    assert all(a == accuracies[0] for a in accuracies), "the accuracies depend on how the jobs were cut"
    for label, pairs in seconds.items():
        walls, cpus = zip(*pairs)
        print(f"{label}: wall {min(walls):.1f}-{max(walls):.1f} s, CPU {min(cpus):.1f}-{max(cpus):.1f} s")
    wall, cpu, _ = timed_sweep(1, tr.JOB_BYTES)
    print(f"chapter 06's training, 1 process: {wall:.1f} s wall, {cpu:.1f} s CPU; the same accuracies")


# ================================================================ the controls
def summary(results):
    """Mean and spread over seeds of one setting's results, with the per-key accuracies and h = 1's split."""
    acc = np.array([r.accuracy for r in results])
    per_key = np.array([sorted(r.accuracy_per_key, reverse=True) for r in results])  # best key first
    on = np.array([np.sort(r.attention_on_asked, axis=-1)[:, ::-1].mean(axis=0) for r in results])  # (seeds, n_keys)
    first = results[0]
    return {"h": first.h, "d": first.d, "d_k": first.d_k, "n_keys": first.n_keys, "steps": first.steps,
            "lr": first.lr, "accuracy": acc.tolist(), "mean": float(acc.mean()), "std": float(acc.std()),
            "per_key_sorted_mean": per_key.mean(axis=0).tolist(), "loss": [r.loss for r in results],
            "attention_on_asked_sorted_mean": on.mean(axis=0).tolist()}


CONTROLS = {
    "four_keys_d32": [{"h": h, "d": 32, "n_keys": 4, "seeds": SEEDS} for h in (1, 2, 4, 8, 16, 32)],
    "one_key": [{"h": h, "n_keys": 1, "seeds": SEEDS} for h in (1, 2, 4, 8, 16)],
    "lr_1e-3": [{"h": h, "lr": 1e-3, "seeds": SEEDS} for h in (1, 2, 4, 8, 16)],
    "long_6000": [{"h": h, "steps": 6000, "seeds": SEEDS} for h in (1, 2, 8, 16)],
    "fixed_dk4": [{"h": h, "d_k": 4, "seeds": SEEDS} for h in (8, 16)],  # the page trains seed 0 only
}


def summary_lines(name, control):
    """The text summary of one control of the record: a heading, then a line per setting."""
    return [f"{name} ({control['seconds']:.0f} s):"] + [
        f"  h = {r['h']:>2}, d_k = {r['d_k']:>2}: accuracy {r['mean']:.3f} +- {r['std']:.3f}; "
        f"per key (best first) {', '.join(f'{a:.3f}' for a in r['per_key_sorted_mean'])}; "
        f"weight on the asked entries {', '.join(f'{a:.2f}' for a in r['attention_on_asked_sorted_mean'])}"
        for r in control["rows"]]


def run_controls(args):
    record = {"command": "python benchmarks/bench_training.py controls", "machine": platform.platform(),
              "python": sys.version.split()[0], "numpy": np.__version__, "controls": {}}
    names = args.only or list(CONTROLS)
    for name in names:
        start = time.perf_counter()
        results = tr.lookup_sweep(CONTROLS[name], processes=args.processes)
        rows = [summary(rs) for rs in results]
        record["controls"][name] = {"seconds": time.perf_counter() - start, "machine": platform.platform(), "rows": rows}
        print("\n".join(summary_lines(name, record["controls"][name])), flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "bench_training_controls.json"
    if args.only and out.exists():  # a partial run keeps the other controls
        old = json.loads(out.read_text())
        old["controls"].update(record["controls"])  # each new control names its machine
        record = old
    out.write_text(json.dumps(record, indent=1) + "\n")
    lines = [line for name, control in record["controls"].items() for line in summary_lines(name, control)]
    out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    step = sub.add_parser("step", help="one training step, NumPy against PyTorch")
    step.add_argument("--repeat", type=int, default=200)
    section = sub.add_parser("section", help="the seconds chapter 06's training adds to the build")
    section.add_argument("--rounds", type=int, default=2, help="rounds of the two ways of cutting the jobs")
    controls = sub.add_parser("controls", help="the recipe's controls, written to benchmarks/results/")
    controls.add_argument("--processes", type=int, default=2)
    controls.add_argument("--only", nargs="*", choices=list(CONTROLS))
    args = parser.parse_args(argv)
    {"step": run_step, "section": run_section, "controls": run_controls}[args.part](args)


if __name__ == "__main__":
    main()
