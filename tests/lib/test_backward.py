"""mha.attention_backward: finite differences, PyTorch autograd, masks, causal, batch axes, bad input."""

import numpy as np
import pytest

import mha
from mha.backward import AttentionGradients, steps_backward

NAMES = ("X", "W_Q", "W_K", "W_V", "W_O")


def layer(rng, lead=(), T=4, d=6, h=2, d_k=3, d_v=2, d_out=5):
    X = rng.standard_normal((*lead, T, d))
    W_Q, W_K = rng.standard_normal((d, h * d_k)) / 2, rng.standard_normal((d, h * d_k)) / 2
    W_V, W_O = rng.standard_normal((d, h * d_v)), rng.standard_normal((h * d_v, d_out))
    return [X, W_Q, W_K, W_V, W_O]


def loss(args, h, G, **kw):
    """A scalar loss <G, Y> whose gradient with respect to Y is G."""
    Y, _ = mha.multi_head_attention(*args, h=h, **kw)
    return float(np.sum(G * Y))


def finite_differences(args, h, G, eps=1e-6, **kw):
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (loss(plus, h, G, **kw) - loss(minus, h, G, **kw)) / (2 * eps)
        grads.append(g)
    return grads


@pytest.mark.parametrize("kw", [{}, {"causal": True},
                                {"mask": np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 0, 0, 0], [1, 1, 1, 1]], bool)}])
def test_matches_finite_differences(kw):
    rng = np.random.default_rng(1)
    args = layer(rng)
    G = rng.standard_normal((4, 5))
    grads = mha.attention_backward(*args, 2, G, **kw)
    assert isinstance(grads, AttentionGradients) and grads._fields == NAMES
    for name, got, want, a in zip(NAMES, grads, finite_differences(args, 2, G, **kw), args):
        assert got.shape == a.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)


def test_batch_axes_sum_the_weight_gradients():
    rng = np.random.default_rng(2)
    args = layer(rng, lead=(2, 3))
    G = rng.standard_normal((2, 3, 4, 5))
    grads = mha.attention_backward(*args, 2, G)
    assert grads.X.shape == (2, 3, 4, 6)
    per_row = [mha.attention_backward(args[0][i, j], *args[1:], 2, G[i, j]) for i in range(2) for j in range(3)]
    np.testing.assert_allclose(grads.X[1, 2], per_row[5].X, rtol=1e-12, atol=1e-12)
    for k, name in enumerate(NAMES[1:], start=1):
        np.testing.assert_allclose(grads[k], sum(g[k] for g in per_row), rtol=1e-10, atol=1e-12, err_msg=name)




def torch_grads(args, h, G, mask=None, causal=False):
    torch = pytest.importorskip("torch")  # here, not at import: the NumPy-only tests above run without it
    X, W_Q, W_K, W_V, W_O = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args)
    *lead, T, _ = X.shape
    d_k = W_Q.shape[1] // h

    def heads(M):
        return M.reshape(*lead, T, h, -1).transpose(-3, -2)

    Q, K, V = heads(X @ W_Q), heads(X @ W_K), heads(X @ W_V)
    S = Q @ K.transpose(-1, -2) / d_k ** 0.5
    allowed = torch.ones(T, T, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & torch.as_tensor(np.asarray(mask, bool))
    if causal:
        allowed = allowed & torch.tril(torch.ones(T, T, dtype=torch.bool))
    A = torch.softmax(S.masked_fill(~allowed, float("-inf")), dim=-1)
    Y = (A @ V).transpose(-3, -2).reshape(*lead, T, -1) @ W_O
    (Y * torch.tensor(G)).sum().backward()
    return [t.grad.numpy() for t in (X, W_Q, W_K, W_V, W_O)]


@pytest.mark.parametrize("lead", [(), (3,), (2, 2)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_torch_autograd(lead, causal, with_mask):
    rng = np.random.default_rng(3)
    T, h = 5, 3
    args = layer(rng, lead=lead, T=T, d=6, h=h, d_k=2, d_v=3, d_out=4)
    G = rng.standard_normal((*lead, T, 4))
    mask = None
    if with_mask:
        mask = rng.random((*lead, 1, T, T)) < 0.6
        mask[..., 0] = True  # every row keeps key 0
    grads = mha.attention_backward(*args, h, G, mask=mask, causal=causal)
    want = torch_grads(args, h, G, mask=None if mask is None else mask, causal=causal)
    for name, got, ref in zip(NAMES, grads, want):
        assert np.max(np.abs(got - ref)) <= 1e-10 * max(1.0, np.max(np.abs(ref))), name


def test_masked_keys_get_no_gradient_through_scores():
    rng = np.random.default_rng(4)
    args = layer(rng, T=3)
    mask = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], bool)  # token 2 is seen by row 2 only
    G = np.zeros((3, 5))
    G[0] = rng.standard_normal(5)  # only row 0 matters, and it sees token 0 only
    grads = mha.attention_backward(*args, 2, G, mask=mask)
    assert np.allclose(grads.X[1:], 0.0, atol=1e-15)  # rows 1 and 2 neither ask nor are seen
    assert np.abs(grads.X[0]).max() > 0


def test_steps_backward_is_the_same_walk():
    rng = np.random.default_rng(5)
    args = layer(rng, lead=(2,))
    G = rng.standard_normal((2, 4, 5))
    steps = mha.attention_steps(*args, h=2)
    a, b = steps_backward(steps, *args, G), mha.attention_backward(*args, 2, G)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_float32_stays_float32():
    rng = np.random.default_rng(6)
    args = [a.astype(np.float32) for a in layer(rng)]
    grads = mha.attention_backward(*args, 2, np.ones((4, 5), np.float32))
    assert all(g.dtype == np.float32 for g in grads)


def test_finite_inputs_give_finite_gradients_when_softmax_saturates():
    rng = np.random.default_rng(7)
    args = layer(rng)
    args[1] = args[1] * 1e3  # nearly one-hot rows
    grads = mha.attention_backward(*args, 2, rng.standard_normal((4, 5)))
    assert all(np.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("change, match", [
    (lambda a: a.update(dY=np.ones((4, 4))), "dY must have the shape"),
    (lambda a: a.update(dY=np.full((4, 5), np.nan)), "dY"),
    (lambda a: a.update(dY="x"), "dY"),
    (lambda a: a.update(h=4), "divisible by h=4"),
    (lambda a: a.update(W_O=np.ones((3, 5))), "W_O"),
    (lambda a: a.update(mask=np.zeros((4, 4), bool)), "nothing to attend"),
    (lambda a: a.update(causal="yes"), "causal"),
])
def test_bad_input_is_refused_clearly(change, match):
    rng = np.random.default_rng(8)
    X, W_Q, W_K, W_V, W_O = layer(rng)
    a = dict(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, h=2, dY=np.ones((4, 5)), mask=None, causal=False)
    change(a)
    with pytest.raises((ValueError, TypeError), match=match):
        mha.attention_backward(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], a["h"], a["dY"],
                               mask=a["mask"], causal=a["causal"])
