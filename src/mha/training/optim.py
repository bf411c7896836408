r"""The optimiser: Adam (0.9, 0.999, 1e-8) on flat weights, and the learning-rate schedule.

Peak learning rate 3e-3, 100 warm-up steps, then a cosine decay to 0
(:func:`learning_rate`).
"""

from __future__ import annotations

import math

import numpy as np

from .._validate import (as_float_array, check_count, check_number, check_out_array, check_positive_int, check_size,
                         is_sequence)

__all__ = ["BETAS", "EPS", "PEAK_LR", "WARMUP", "adam_step", "adam_update", "learning_rate", "learning_rates"]

PEAK_LR = 3e-3
WARMUP = 100
BETAS = (0.9, 0.999)
EPS = 1e-8


def learning_rate(step, *, steps, peak=PEAK_LR, warmup=WARMUP):
    r"""The learning rate at ``step`` (counted from 0): a linear warm-up, then a cosine decay to 0.

    .. math:: \eta(s) = \begin{cases} \eta_{\max}\,(s + 1) / w & s < w \\
              \tfrac12 \eta_{\max} \big(1 + \cos(\pi\,(s + 1 - w) / (N - w))\big) & s \ge w \end{cases}

    so the warm-up reaches ``peak`` at step ``w - 1`` and the last step ``N - 1`` uses 0.

    Examples
    --------
    >>> learning_rate(0, steps=1500), learning_rate(99, steps=1500), learning_rate(1499, steps=1500)
    (3e-05, 0.003, 0.0)
    """
    steps, peak, warmup = _check_schedule(steps, peak, warmup)
    step = check_count(step, "step")
    if step >= steps:
        raise ValueError(f"step={step} is past the schedule: steps are counted from 0 to steps - 1 = {steps - 1}")
    return _rate(step, steps, peak, warmup)


def learning_rates(steps, *, peak=PEAK_LR, warmup=WARMUP):
    """:func:`learning_rate` at every step ``0 .. steps - 1``, as a list: the schedule a run follows, checked once.

    Examples
    --------
    >>> learning_rates(3, warmup=2)
    [0.0015, 0.003, 0.0]
    """
    steps, peak, warmup = _check_schedule(steps, peak, warmup)
    return [_rate(step, steps, peak, warmup) for step in range(steps)]


def _check_schedule(steps, peak, warmup):
    steps = check_positive_int(steps, "steps")
    peak = check_number(peak, "peak", low=0.0, high=1.0)
    warmup = check_size(warmup, "warmup", high=10 ** 9)
    return steps, peak, warmup


def _rate(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step + 1 - warmup) / (steps - warmup)))  # steps > step >= warmup




def adam_step(theta, grad, state, lr, betas=BETAS, eps=EPS):
    r"""One Adam update of the flat weights ``theta``, in place, with bias correction.

    .. math:: m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
              \theta \leftarrow \theta - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    ``state`` is a dict holding ``t`` (steps taken) and the moments ``m`` and ``v`` (created on first use).
    The arguments are checked (``theta`` a writable float array, ``grad`` finite and of its shape, ``0 <= lr <= 1``,
    ``0 <= beta < 1``, ``eps > 0``); if the update would overflow, ``theta`` and ``state`` are left as they were
    and a ``ValueError`` says so. :func:`adam_update` is the same update, unchecked: the step a run repeats.

    Examples
    --------
    >>> theta, state = np.zeros(2, np.float32), {}
    >>> adam_step(theta, np.array([1.0, -1.0], np.float32), state, 0.1)
    >>> [round(float(x), 6) for x in theta], state["t"]
    ([-0.1, 0.1], 1)
    """
    theta = check_out_array(theta, "theta")
    grad = as_float_array(grad, "grad")
    if grad.shape != theta.shape:
        raise ValueError(f"grad must have the shape of theta {theta.shape}, got {grad.shape}")
    lr = check_number(lr, "lr", low=0.0, high=1.0)
    if not is_sequence(betas) or not hasattr(betas, "__len__") or len(betas) != 2:
        raise TypeError(f"betas must be a pair (beta1, beta2), got {betas!r:.60}")
    b1, b2 = (check_number(b, f"betas[{i}]", low=0.0, high=1.0) for i, b in enumerate(betas))
    if b1 == 1.0 or b2 == 1.0:
        raise ValueError(f"betas must each be below 1 (the bias correction divides by 1 - beta^t), got {tuple(betas)}")
    eps = check_number(eps, "eps", low=0.0, low_open=True)
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict (empty at the first step), got {type(state).__name__}")
    t = check_count(state.get("t", 0), "state['t']")
    trial = {"t": t}
    if t and "m" in state:
        for name in ("m", "v"):
            if name not in state:
                raise ValueError(f"state has 'm' but no {name!r}: pass the dict the earlier steps filled")
            trial[name] = check_out_array(state[name], f"state[{name!r}]", theta.shape, dtype=theta.dtype).copy()
        trial["tmp"] = np.empty_like(theta)
    elif "m" in state or "v" in state:
        raise ValueError("state holds moments but no step count 't': pass the dict the earlier steps filled")
    new_theta = theta.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        adam_update(new_theta, grad, trial, lr, (b1, b2), eps)
    if not (np.isfinite(new_theta).all() and np.isfinite(trial["v"]).all()):
        raise ValueError(f"the update overflowed {theta.dtype} (grad's largest entry is {np.abs(grad).max():.3g}, "
                         f"lr {lr:g}); theta and state are unchanged. Scale the gradient or the learning rate down")
    theta[...] = new_theta
    state.update(trial)


def adam_update(theta, grad, state, lr, betas=BETAS, eps=EPS):
    """:func:`adam_step`'s update, unchecked: the step a training run repeats (its arguments are checked once per run)."""
    b1, b2 = betas
    t = state["t"] = state.get("t", 0) + 1
    if "m" not in state:
        state.update(m=np.zeros_like(theta), v=np.zeros_like(theta), tmp=np.empty_like(theta))  # tmp: scratch
    m, v, tmp = state["m"], state["v"], state["tmp"]
    m *= b1
    m += np.multiply(grad, 1 - b1, out=tmp)
    v *= b2
    v += np.multiply(np.multiply(grad, 1 - b2, out=tmp), grad, out=tmp)
    denominator = np.sqrt(np.divide(v, 1 - b2 ** t, out=tmp), out=tmp)
    denominator += eps  # sqrt(v / (1 - b2^t)) + eps
    theta -= np.divide(np.multiply(m, lr / (1 - b1 ** t), out=np.empty_like(m)), denominator, out=tmp)
