"""Many experiments: one model per head count, or any list of settings, here or in worker processes.

:func:`head_sweep` trains one model per head count, all else equal, and
:func:`lookup_sweep` several settings of :func:`mha.training.dictionary_lookups`.
Models whose weights have the same shapes (every ``h`` with ``d_k = d / h``)
and that read the same lookups train side by side in one grid
(:func:`mha.training.run.train_grid`), as many seeds at a time as keep the
step's arrays small (``job_bytes``, by default :data:`JOB_BYTES`); the jobs
are shared between worker processes if asked. Each model's numbers are the
ones it gets alone, whatever the grouping.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import numpy as np

from .._validate import check_count, check_number, check_positive_int, is_sequence
from .model import DTYPE
from .run import check_setting, dictionary_lookups, lookup_results, train_grid
from .task import BATCH, N_ENTRIES

__all__ = ["JOB_BYTES", "head_sweep", "lookup_sweep"]


def head_sweep(hs, *, seed=0, processes=1, **setting):
    """One :func:`dictionary_lookup` per head count in ``hs``, all else equal, trained side by side where they can be.

    Parameters
    ----------
    hs : sequence of int
        The head counts.
    seed : int
        The seed of every model.
    processes : int
        As in :func:`lookup_sweep`.
    **setting
        ``d``, ``d_k``, ``n_keys``, ``steps``, ``lr``, as in :func:`dictionary_lookup`.

    Returns
    -------
    list of LookupResult
        One per head count, in order; each the same as :func:`dictionary_lookup` gives.

    Examples
    --------
    >>> [(r.h, r.d_k) for r in head_sweep((1, 4), n_keys=1, steps=3)]
    [(1, 16), (4, 4)]
    """
    if not is_sequence(hs):
        raise TypeError(f"hs must be a sequence of head counts, got {type(hs).__name__}")
    if "h" in setting or "seeds" in setting:
        raise TypeError("head_sweep takes the head counts as hs and one seed as seed, not h or seeds")
    hs = list(hs)
    if not hs:
        raise ValueError("hs is empty: give at least one head count")
    seeds = (check_count(seed, "seed"),)
    return [rs[0] for rs in lookup_sweep([{**setting, "h": h, "seeds": seeds} for h in hs], processes=processes)]


_SETTINGS = ("h", "d", "d_k", "n_keys", "seeds", "steps", "lr")
_DEFAULTS = {name: p.default for name, p in inspect.signature(dictionary_lookups).parameters.items()
             if p.default is not inspect.Parameter.empty}  # d, d_k, n_keys, seeds, steps, lr


def _checked(setting):
    """A setting of :func:`lookup_sweep` with its defaults filled in, checked (:func:`mha.training.run.check_setting`)."""
    return check_setting(**{**_DEFAULTS, **setting})


def _cost(settings, job):
    """A rough guess of a job's training time, to hand the longest jobs out first and to balance them.

    In units of one column of one model's keys and values for one step: each
    step costs about 24 of them whatever it trains, each model 13 more, and
    its ``c = h d_k + d`` columns (fitted to the job times of chapter 06's
    sweep on the book's machine, to within about 15 %).
    """
    indices, positions = job
    columns = [sum(_checked(settings[i])[1][w][1] for w in ("W_K", "W_V")) for i in indices]
    return _checked(settings[indices[0]])[3] * (24 + len(positions) * sum(13 + c for c in columns))


def _usable_cpus():
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


#: The default ``job_bytes`` of :func:`lookup_sweep`: the largest keys-and-values array, in bytes, that one
#: step of a job works on (``model._query_layer``'s ``KV``: N G models x c columns x 9 tokens x 256 lookups,
#: float32); the step's other arrays are about as large again. Beyond it they outgrow a core's cache (2 MiB of L2 on the book's machine), and the
#: step slows down, most of all when the machine is busy. There, one step of five head counts with
#: three seeds stacked (4.4 MiB) took 0.83-0.97 ms per model, one seed at a time (1.4 MiB) 0.48-0.55 ms;
#: on a quiet machine, 0.48-0.54 against 0.57-0.61 ms. Chapter 06's sweep on the busy machine:
#: 13.3-14.3 s (2 processes) with its jobs cut at this size, 15.9-17.0 s without
#: (``benchmarks/bench_training.py section``). On a 2-core AMD EPYC (1 MiB of L2) the stacked step
#: was slow for another reason: about 2,500 page faults per step (9-10 ms of system time in a 20-23 ms
#: step), as the C library handed its large arrays back to the system after each step and took them
#: again; cut at this size, 5 per step. Now that a run makes its arrays once (:class:`mha.training.model.Workspace`), the
#: stacked step faults 44 times a step there, and the chapter's sweep took the same time cut or not
#: (14.5-15.1 s against 14.8-15.1 s wall, 2 processes).
JOB_BYTES = 3 * 2**19


def _job_bytes(settings, job):
    """The size of a job's ``KV`` array: its models (settings x seeds) times their columns (``model._query_layer``)."""
    indices, positions = job
    shapes = _checked(settings[indices[0]])[1]
    columns = shapes["W_K"][1] + shapes["W_V"][1]
    return len(indices) * len(positions) * columns * (N_ENTRIES + 1) * BATCH * np.dtype(DTYPE).itemsize


def _halves(job):
    """A job cut in two: by seeds if it has several, else by settings."""
    indices, positions = job
    if len(positions) > 1:
        return [(indices, positions[:len(positions) // 2]), (indices, positions[len(positions) // 2:])]
    return [(indices[:len(indices) // 2], positions), (indices[len(indices) // 2:], positions)]


def _jobs(settings, processes, job_bytes=JOB_BYTES):
    """The settings, grouped into jobs of models that train side by side: ``(indices, seed positions)``.

    Settings whose weights have the same shapes and that read the same
    lookups (same seeds, steps, learning rate) train as one grid
    (:func:`mha.training.run.train_grid`), on some or all of their seeds (positions in
    their ``seeds``). A job whose step would work on more than
    ``job_bytes`` of keys and values is cut in two, by seeds first; then,
    while the largest job would take more than its share of the processes'
    time, it is cut in two as well.
    """
    groups = {}
    for i, s in enumerate(settings):
        h, shapes, seeds, steps, lr = _checked(s)
        groups.setdefault((tuple(shapes.items()), tuple(seeds), steps, lr), []).append(i)
    jobs = [(tuple(indices), tuple(range(len(key[1])))) for key, indices in groups.items()]
    cuttable = lambda job: len(job[0]) > 1 or len(job[1]) > 1
    while big := [j for j in jobs if cuttable(j) and _job_bytes(settings, j) > job_bytes]:
        jobs.remove(big[0])
        jobs += _halves(big[0])
    cost = functools.partial(_cost, settings)
    share = lambda: sum(cost(j) for j in jobs) / processes
    while any(cuttable(j) and cost(j) > share() for j in jobs):
        big = max((j for j in jobs if cuttable(j)), key=cost)
        jobs.remove(big)
        jobs += _halves(big)
    return sorted(jobs, key=cost, reverse=True)  # the longest first


def _job_settings(settings, job):
    """The settings of a job, each with only the job's seeds."""
    indices, positions = job
    return [{**settings[i], "seeds": tuple(_checked(settings[i])[2][p] for p in positions)} for i in indices]


def _run_job(settings):
    """Train the settings of one job (:func:`_jobs`) side by side; one list of results per setting."""
    checked = [_checked(s) for s in settings]
    hs = tuple(c[0] for c in checked)
    _, shapes, seeds, steps, lr = checked[0]
    theta, train_loss = train_grid(hs, shapes, seeds, steps, lr)
    return [lookup_results(theta[g::len(hs)], shapes, train_loss[g::len(hs)], h, seeds, steps, lr) for g, h in enumerate(hs)]


@contextlib.contextmanager
def _own_resource_tracker():
    """Stop multiprocessing's resource tracker on the way out, if it was not running on the way in.

    Starting ``spawn`` workers starts a tracker process, which ignores SIGTERM.
    A Jupyter kernel that has one takes seconds to shut down (ipykernel asks
    its children to stop, waits, then kills them), which adds about 2.4 s to a
    notebook's run at build time. The tracker we started holds nothing once
    the workers are gone, so it is stopped; a tracker that was already running
    is left alone.
    """
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    ours = getattr(tracker, "_fd", None) is None and callable(getattr(tracker, "_stop", None))
    try:
        yield
    finally:
        if ours:
            tracker._stop()


def lookup_sweep(settings, *, processes=1, job_bytes=JOB_BYTES):
    """Several experiments of :func:`dictionary_lookups`, here or in worker processes.

    Parameters
    ----------
    settings : sequence of dict
        The keyword arguments of :func:`dictionary_lookups` for each experiment
        (``h`` is required; ``d``, ``d_k``, ``n_keys``, ``seeds``, ``steps``, ``lr`` optional).
    processes : int
        How many worker processes to train in, at most one per CPU this process
        may use. 1 trains them here, one after another. Workers are fresh
        Python processes (``spawn``; a script that calls this needs the
        ``if __name__ == "__main__":`` guard), each with one BLAS thread. A
        result depends only on its setting, so every value of ``processes``
        gives the same numbers. If workers cannot be started, the experiments
        run here.
    job_bytes : float
        The largest keys-and-values array, in bytes, that one step of a job
        may work on (default :data:`JOB_BYTES`); a larger grid trains some of
        its seeds at a time. ``math.inf`` never cuts a grid by size. It
        changes how the work is grouped, never a result.

    Settings whose weights have the same shapes and that read the same
    lookups (the same ``seeds``, ``steps`` and ``lr``), for example every
    ``h`` with ``d_k = d / h``, train side by side in one process and share
    the products of their one-hots; a grid too large for a core's cache
    (``job_bytes``) trains some of its seeds at a time. Each model still
    gets the numbers it gets alone.

    Returns
    -------
    list of list of LookupResult
        For each setting, in order, one result per seed.

    Examples
    --------
    >>> runs = lookup_sweep([{"h": 1, "seeds": (0,), "steps": 3}, {"h": 2, "seeds": (0, 1), "steps": 3}])
    >>> [[r.h for r in rs] for rs in runs]
    [[1], [2, 2]]
    """
    if isinstance(settings, (str, bytes, dict)) or not hasattr(settings, "__iter__"):
        raise TypeError(f"settings must be a sequence of dicts of keyword arguments, got {type(settings).__name__}")
    if not is_sequence(settings):
        raise TypeError(f"settings must be a sequence of dicts of dictionary_lookup's arguments, got {settings!r:.60}")
    settings = [dict(s) if isinstance(s, dict) else s for s in settings]
    for i, s in enumerate(settings):
        if not isinstance(s, dict) or "h" not in s or set(s) - set(_SETTINGS):
            raise ValueError(f"settings[{i}] must be a dict with 'h' and only the keys {', '.join(_SETTINGS)}; "
                             f"got {s!r}")
        _checked(s)  # every argument checked here, before any worker starts
    processes = min(check_positive_int(processes, "processes"), _usable_cpus())
    job_bytes = check_number(job_bytes, "job_bytes", low=0, low_open=True, finite=False)
    jobs = _jobs(settings, processes, job_bytes)
    done = {}  # job -> one list of results per setting
    if processes > 1 and len(jobs) > 1:
        import concurrent.futures
        import multiprocessing

        try:
            with _own_resource_tracker(), concurrent.futures.ProcessPoolExecutor(
                    min(processes, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = [pool.submit(_run_job, _job_settings(settings, job)) for job in jobs]
                done = {job: future.result() for job, future in zip(jobs, futures)}
        except (OSError, concurrent.futures.process.BrokenProcessPool):
            done = {}
    for job in jobs:
        if job not in done:  # here: one process, or workers could not be started
            done[job] = _run_job(_job_settings(settings, job))
    by_seed = {}  # (setting, seed position) -> result
    for (indices, positions), results in done.items():
        for i, per_seed in zip(indices, results):
            by_seed.update(((i, p), r) for p, r in zip(positions, per_seed))
    return [[by_seed[i, p] for p in range(len(_checked(s)[2]))] for i, s in enumerate(settings)]
