"""What the argument checks of issue 31 cost chapter 06's training (``mha.training``).

Two parts, each run from the repository root:

    .venv/bin/python benchmarks/bench_checks.py checks [--repeat 20]
    .venv/bin/python benchmarks/bench_checks.py section --baseline /path/to/old/src [--rounds 3]

``checks`` times, alone, every check one run of the chapter makes (once per run, never per step:
``check_setting``, the schedule ``learning_rates``, ``unpack``'s and ``predict``'s checks of the
weights and of the test set's batches), repeated and interleaved, and prints the median and the
spread in milliseconds next to one run of the chapter's training.

``section`` runs the chapter's training (the ``lookup_sweep`` of ``bench_training.py``, in one
process) with this checkout's ``src`` and with ``--baseline`` (for example ``git archive`` of the
commit before the checks, unpacked), in fresh interpreters, alternating which goes first, and prints
each one's CPU and wall seconds and the difference, with its spread; the accuracies must be equal.

Measured on the book's 2-core machine shared with other workers (load 5-6 during the run), see
the report of issue 31.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SWEEP = """
import json, os, sys, time
import mha.training as tr
settings = ([{"h": h, "seeds": (0, 1, 2)} for h in (1, 2, 4, 8, 16)]
            + [{"h": h, "d_k": 4, "seeds": (0,)} for h in (1, 2, 8, 16)])
wall, cpu = time.perf_counter(), time.process_time()
results = tr.lookup_sweep(settings, processes=1)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "src": tr.__file__,
                  "acc": [[r.accuracy for r in rs] for rs in results]}))
"""


def run_checks(args):
    """The checks one run makes, timed alone (median and spread over ``repeat`` rounds)."""
    sys.path.insert(0, str(ROOT / "src"))
    from mha import training as tr
    from mha.training import model, optim, run, task

    h, seeds, steps = 2, (0, 1, 2), 1500
    shapes = tr.param_shapes(h, 16, 8, 2)
    theta = np.stack([tr.init_params(np.random.default_rng(s), shapes) for s in seeds])
    test = tr.test_set(2)
    parts = [task.LookupBatch(*(np.broadcast_to(a[i:i + 1024], (3, *a[i:i + 1024].shape))
                                for a in (test.keys, test.values, test.asked))) for i in range(0, 8192, 1024)]

    def checks_of_one_run():
        run.check_setting(h, 16, None, 2, seeds, steps, 3e-3)  # dictionary_lookups / lookup_sweep
        optim.learning_rates(steps, peak=3e-3, warmup=100)  # the schedule (computed once; was 1500 calls)
        for _ in range(3):  # train_grid's two unpacks, lookup_results' one
            model.unpack(theta, shapes)
        for part in parts + parts[:1]:  # _score's 8 predicts and the samples' one: their checks
            model._check_theta(theta, shapes, h)
            task.check_batch(part, 2, 3)

    def one_run():
        tr.dictionary_lookups(h, seeds=seeds, steps=300)

    timings = {"the checks of one run": [], "one run of 300 steps, 3 seeds": []}
    for r in range(args.repeat):
        for name, f in (list(timings.items()) if r % 2 == 0 else list(timings.items())[::-1]):
            start = time.perf_counter()
            (checks_of_one_run if name.startswith("the checks") else one_run)()
            f.append(time.perf_counter() - start)
    for name, t in timings.items():
        ms = np.array(t) * 1e3
        print(f"{name}: median {np.median(ms):.2f} ms (min {ms.min():.2f}, max {ms.max():.2f}, n = {len(ms)})")
    share = np.median(timings["the checks of one run"]) / np.median(timings["one run of 300 steps, 3 seeds"])
    print(f"the checks are {100 * share:.3f} % of a 300-step run (a 1500-step run: about a fifth of that)")


def run_section(args):
    """The chapter's training with this ``src`` and with ``--baseline``, interleaved, in fresh interpreters."""
    versions = {"with the checks": str(ROOT / "src"), "baseline": str(Path(args.baseline).resolve())}
    seconds = {name: [] for name in versions}
    accuracies = []
    for r in range(args.rounds):
        for name, src in (list(versions.items()) if r % 2 == 0 else list(versions.items())[::-1]):
            env = {**os.environ, "PYTHONPATH": src}
            out = subprocess.run([sys.executable, "-c", SWEEP], env=env, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            assert result["src"].startswith(src), result["src"]
            seconds[name].append((result["cpu"], result["wall"]))
            accuracies.append(result["acc"])
            print(f"round {r}, {name}: {result['cpu']:.2f} s CPU, {result['wall']:.2f} s wall", flush=True)
    assert all(a == accuracies[0] for a in accuracies), "the accuracies differ"
    for name, pairs in seconds.items():
        cpu, wall = zip(*pairs)
        print(f"{name}: CPU median {statistics.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f}), wall median "
              f"{statistics.median(wall):.2f} s ({min(wall):.2f}-{max(wall):.2f})")
    diffs = [a[0] - b[0] for a, b in zip(seconds["with the checks"], seconds["baseline"])]
    print(f"CPU difference per round (with - baseline): {', '.join(f'{d:+.2f}' for d in diffs)} s; "
          "the same accuracies")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    checks = sub.add_parser("checks")
    checks.add_argument("--repeat", type=int, default=20)
    section = sub.add_parser("section")
    section.add_argument("--baseline", required=True, help="a src folder of the code before the checks")
    section.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    {"checks": run_checks, "section": run_section}[args.part](args)


if __name__ == "__main__":
    main()
