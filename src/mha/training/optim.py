r"""The optimiser: Adam (0.9, 0.999, 1e-8) on flat weights, and the learning-rate schedule.

Peak learning rate 3e-3, 100 warm-up steps, then a cosine decay to 0
(:func:`learning_rate`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BETAS", "EPS", "PEAK_LR", "WARMUP", "adam_step", "learning_rate"]

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
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step + 1 - warmup) / (steps - warmup)))


def adam_step(theta, grad, state, lr, betas=BETAS, eps=EPS):
    r"""One Adam update of the flat weights ``theta``, in place, with bias correction.

    .. math:: m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
              \theta \leftarrow \theta - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    ``state`` is a dict holding ``t`` (steps taken) and the moments ``m`` and ``v`` (created on first use).
    """
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
