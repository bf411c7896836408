"""One experiment: train models on the lookup, several seeds side by side, and score them on the fixed test set.

Adam (:mod:`mha.training.optim`) with a warm-up then a cosine decay,
batches of 256 fresh samples, the mean cross-entropy over the answers
(:mod:`mha.training.model`). The score is the accuracy on one fixed test set
of 8192 samples (:func:`mha.training.task.test_set`).

:func:`dictionary_lookup` runs one experiment and is deterministic per seed:
seed ``s`` draws its starting weights and its training lookups from the two
streams of ``numpy.random.SeedSequence(s).spawn(2)``.
:func:`dictionary_lookups` trains several seeds side by side, and
:func:`train_grid` several head counts of the same weights' shapes too
(:mod:`mha.training.sweep` uses it); each model's numbers are the ones it
gets alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits  # the products here are tiny: BLAS threads cost more than they save

from .._validate import check_count, check_counts, check_number, check_positive_int, check_size
from .model import Workspace, init_params, loss_and_grads_into, param_shapes, predict, unpack
from .optim import PEAK_LR, WARMUP, adam_update, learning_rates
from .task import BATCH, N_ENTRIES, TEST_SIZE, LookupBatch, lookup_batch, test_set

__all__ = ["LookupResult", "N_SAMPLES", "check_setting", "dictionary_lookup", "dictionary_lookups", "lookup_results",
           "train", "train_grid"]

N_SAMPLES = 4  # sample queries whose attention a result keeps


@dataclass(frozen=True)
class LookupResult:
    """One trained model on the dictionary lookup, scored on the fixed test set.

    Attributes
    ----------
    h, d, d_k, d_v, n_keys, seed, steps : int
        The experiment.
    lr : float
        The peak learning rate.
    accuracy : float
        Fraction of all test answers that are right.
    accuracy_per_key : tuple of float
        The same for each asked slot (first key named, second, ...).
    loss : float
        Mean test cross-entropy per answer.
    train_loss : ndarray, shape (steps,)
        The training loss at every step.
    attention_on_asked : ndarray, shape (h, n_keys)
        Each head's weight on the entry holding each asked key, averaged over the test set.
    samples : LookupBatch
        The first few test lookups.
    sample_weights : ndarray, shape (n, h, 9)
        Each head's weights over the 8 entries and the query itself, for those lookups.
    sample_attention : ndarray, shape (n, h, n_keys)
        Each head's weight on the entries the query names, for those lookups.
    sample_answers : ndarray of int, shape (n, n_keys)
        The model's answers to those lookups.
    params : dict of str to ndarray
        The trained weights.
    """

    h: int
    d: int
    d_k: int
    d_v: int
    n_keys: int
    seed: int
    steps: int
    lr: float
    accuracy: float
    accuracy_per_key: tuple
    loss: float
    train_loss: np.ndarray
    attention_on_asked: np.ndarray
    samples: LookupBatch
    sample_weights: np.ndarray
    sample_attention: np.ndarray
    sample_answers: np.ndarray
    params: dict


def _check_shape(h, d, d_k, n_keys):
    h, d = check_positive_int(h, "h"), check_size(d, "d", high=4096)
    if d % h:
        raise ValueError(f"h={h} must divide the width d={d} (every head gets d_v = d/h value columns)")
    d_k = d // h if d_k is None else check_size(d_k, "d_k", high=4096)
    n_keys = check_positive_int(n_keys, "n_keys")
    if n_keys > N_ENTRIES:
        raise ValueError(f"n_keys={n_keys} asks for more keys than the {N_ENTRIES} entries hold")
    return h, d, d_k, n_keys


def _score(theta, shapes, h, n_keys):
    """Each model's accuracy per key ``(M, n_keys)``, mean loss ``(M,)`` and mean weight on the asked entries."""
    test, M = test_set(n_keys), theta.shape[0]
    right, losses, on_asked = [], [], []
    for start in range(0, TEST_SIZE, 1024):
        part = LookupBatch(*(np.broadcast_to(a[start:start + 1024], (M, *a[start:start + 1024].shape))
                             for a in (test.keys, test.values, test.asked)))
        answers, loss, weights = predict(theta, shapes, part, h)
        right.append(answers == part.answers)  # (M, b, n_keys)
        losses.append(loss)
        on_asked.append(np.take_along_axis(weights, part.asked[:, :, None, :], axis=-1))  # (M, b, h, n_keys)
    right, losses, on_asked = (np.concatenate(x, axis=1) for x in (right, losses, on_asked))
    return right.mean(axis=1), losses.mean(axis=(1, 2)), on_asked.mean(axis=1)


@functools.lru_cache(maxsize=4)
def _training_lookups(seed, steps, n_keys, chunk=100):
    """Every training lookup of seed ``seed``, ``steps * 256`` of them (read-only, small integers).

    Drawn ``chunk`` batches at a time from the second stream of
    ``numpy.random.SeedSequence(seed).spawn(2)``. Kept for the few most recent
    seeds: models with other head counts but the same seed train on the same
    lookups without drawing them again.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
    fields = {f: np.empty((steps * BATCH, n), np.uint8) for f, n in
              (("keys", N_ENTRIES), ("values", N_ENTRIES), ("asked", n_keys))}
    for start in range(0, steps, chunk):
        rows = slice(start * BATCH, min(start + chunk, steps) * BATCH)
        draw = lookup_batch(rng, rows.stop - rows.start, n_keys)
        for f, a in fields.items():
            a[rows] = getattr(draw, f)  # numbers below 16 fit in uint8
    for a in fields.values():
        a.setflags(write=False)
    return LookupBatch(**fields)


def _batches(seeds, steps, n_keys):
    """``steps`` batches ``(M, B, ...)`` of fresh lookups, model ``m`` reading the stream of ``seeds[m]``."""
    streams = [_training_lookups(seed, steps, n_keys) for seed in seeds]
    keys, values, asked = (np.stack([getattr(s, f) for s in streams]).reshape(len(seeds), steps, BATCH, -1)
                           for f in ("keys", "values", "asked"))  # (M, steps, B, ·)
    asked_keys, answers = (np.take_along_axis(a, asked, axis=-1) for a in (keys, values))  # once for all steps
    for step in range(steps):
        batch = LookupBatch(keys[:, step], values[:, step], asked[:, step])
        batch.__dict__.update(asked_keys=asked_keys[:, step], answers=answers[:, step])  # the cached properties
        yield batch


def train(h, *, d=16, d_k=None, n_keys=2, seeds=(0,), steps=1500, lr=PEAK_LR):
    """Train one model per seed, side by side; return their flat weights, the layout and the losses.

    Seed ``s`` draws its starting weights and its training lookups from the two
    streams of ``numpy.random.SeedSequence(s).spawn(2)``, so a model depends
    only on its own seed. Parameters are those of :func:`dictionary_lookup`.

    Returns
    -------
    theta : ndarray, shape (M, P)
    shapes : dict of str to tuple
    train_loss : ndarray, shape (M, steps)
    """
    h, shapes, seeds, steps, lr = check_setting(h, d, d_k, n_keys, seeds, steps, lr)
    theta, train_loss = train_grid((h,), shapes, seeds, steps, lr)
    return theta, shapes, train_loss


def check_setting(h, d, d_k, n_keys, seeds, steps, lr):
    """One experiment's arguments, checked: ``h``, the weights' shapes, ``seeds``, ``steps``, ``lr``.

    Parameters
    ----------
    h, d, d_k, n_keys, seeds, steps, lr
        As in :func:`dictionary_lookups` (``d_k`` may be None: ``d / h``).

    Returns
    -------
    tuple
        ``(h, shapes, seeds, steps, lr)``: ``shapes`` from :func:`mha.training.model.param_shapes`,
        ``seeds`` a list of ints.
    """
    h, d, d_k, n_keys = _check_shape(h, d, d_k, n_keys)
    seeds = check_counts(seeds, "seeds")
    steps = check_size(steps, "steps", high=10 ** 7)
    lr = check_number(lr, "lr", low=0.0, low_open=True, high=1.0)
    return h, param_shapes(h, d, d_k, n_keys), seeds, steps, lr


def train_grid(hs, shapes, seeds, steps, lr):
    """Train, for every seed, one model per head count in ``hs`` (all with weights of ``shapes``), side by side.

    Row ``s G + g`` of the results is seed ``seeds[s]`` with ``hs[g]`` heads
    (``G = len(hs)``). The models of one seed start from the same weights and
    read the same lookups, so they share the products of its one-hots
    (``model._query_layer``); each model's numbers are the ones it gets when
    trained alone (``tests/test_training.py`` checks it).

    Parameters
    ----------
    hs : tuple of int
        The head counts, ``G`` of them; every one must have weights of ``shapes``.
    shapes : dict of str to tuple
        From :func:`mha.training.model.param_shapes`.
    seeds : sequence of int
        ``N`` seeds, as in :func:`train`.
    steps : int
    lr : float
        The peak learning rate.

    Returns
    -------
    theta : ndarray, shape (N G, P)
    train_loss : ndarray, shape (N G, steps)
    """
    inits = [np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0]) for seed in seeds]
    theta = np.repeat(np.stack([init_params(rng, shapes) for rng in inits]), len(hs), axis=0)  # (N G, P)
    grad = np.empty_like(theta)
    w, g = unpack(theta, shapes), unpack(grad, shapes)  # views, made once: the steps write theta and grad in place
    ws = Workspace(theta.shape[0], shapes["W_K"][1] + shapes["W_V"][1], shapes["W_Q"][1], hs, BATCH, theta.dtype)
    state, train_loss = {}, np.empty((theta.shape[0], steps))
    rates = learning_rates(steps, peak=lr, warmup=min(WARMUP, max(steps - 1, 1)))  # the schedule, checked once
    with threadpool_limits(1, user_api="blas"):
        for step, batch in enumerate(_batches(seeds, steps, shapes["R"][0])):
            train_loss[:, step] = loss_and_grads_into(w, g, batch, hs, ws)
            adam_update(theta, grad, state, rates[step])
    return theta, train_loss


def dictionary_lookups(h, *, d=16, d_k=None, n_keys=2, seeds=(0, 1, 2), steps=1500, lr=PEAK_LR):
    """:func:`dictionary_lookup` for several seeds, trained side by side (faster than one by one).

    Returns
    -------
    list of LookupResult
        One per seed, in order.
    """
    h, shapes, seeds, steps, lr = check_setting(h, d, d_k, n_keys, seeds, steps, lr)
    theta, train_loss = train_grid((h,), shapes, seeds, steps, lr)
    return lookup_results(theta, shapes, train_loss, h, seeds, steps, lr)


def lookup_results(theta, shapes, train_loss, h, seeds, steps, lr):
    """The :class:`LookupResult` of each trained model ``theta[m]`` (seed ``seeds[m]``, ``h`` heads).

    Parameters
    ----------
    theta : ndarray, shape (M, P)
        The trained weights of ``M`` models with ``h`` heads, laid out by ``shapes``.
    train_loss : ndarray, shape (M, steps)
    h, seeds, steps, lr
        The experiment, as in :func:`dictionary_lookups`; ``seeds`` has ``M`` entries.

    Returns
    -------
    list of LookupResult
        One per model, scored on the fixed test set.
    """
    d, n_keys = shapes["E"][1], shapes["R"][0]
    d_k = shapes["W_Q"][1] // h
    test = test_set(n_keys)
    samples = LookupBatch(*(np.broadcast_to(a[:N_SAMPLES], (theta.shape[0], N_SAMPLES, a.shape[1]))
                            for a in (test.keys, test.values, test.asked)))
    with threadpool_limits(1, user_api="blas"):
        per_key, test_loss, on_asked = _score(theta, shapes, h, n_keys)
        answers, _, weights = predict(theta, shapes, samples, h)
    sample_attention = np.take_along_axis(weights, samples.asked[:, :, None, :], axis=-1)  # (M, n, h, n_keys)
    views = unpack(theta, shapes)
    return [LookupResult(h=h, d=d, d_k=d_k, d_v=d // h, n_keys=n_keys, seed=int(seed), steps=int(steps),
                         lr=float(lr), accuracy=float(per_key[m].mean()), accuracy_per_key=tuple(float(a) for a in per_key[m]),
                         loss=float(test_loss[m]), train_loss=train_loss[m], attention_on_asked=on_asked[m],
                         samples=LookupBatch(test.keys[:N_SAMPLES], test.values[:N_SAMPLES],
                                             test.asked[:N_SAMPLES]),
                         sample_weights=weights[m], sample_attention=sample_attention[m],
                         sample_answers=answers[m], params={k: v[m].copy() for k, v in views.items()})
            for m, seed in enumerate(seeds)]


def dictionary_lookup(h, *, d=16, d_k=None, n_keys=2, seed=0, steps=1500, lr=PEAK_LR):
    """Train ``h`` heads on the dictionary lookup and score them on the fixed test set.

    Parameters
    ----------
    h : int
        Number of heads; must divide ``d`` (values have width ``d_v = d / h``).
    d : int
        Model width.
    d_k : int, optional
        Width of each query/key head (default ``d / h``, so every ``h`` has the same parameters).
    n_keys : int
        Keys the query names (1 to 8); the model answers each.
    seed : int
        Seeds the starting weights and the training batches; the same seed gives the same result.
    steps : int
        Adam steps, each on 256 fresh lookups.
    lr : float
        Peak learning rate of the schedule (:func:`learning_rate`).

    Returns
    -------
    LookupResult

    Examples
    --------
    >>> r = dictionary_lookup(2, steps=3)
    >>> r.d_k, len(r.accuracy_per_key), r.sample_weights.shape
    (8, 2, (4, 2, 9))
    """
    return dictionary_lookups(h, d=d, d_k=d_k, n_keys=n_keys, seeds=(check_count(seed, "seed"),), steps=steps,
                              lr=lr)[0]
