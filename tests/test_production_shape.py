"""The production layouts of PyTorch map exactly onto mha's W_Q, W_K, W_V, W_O.

PyTorch is the outside oracle here (float64). Two modules are compared with
``mha.multi_head_attention``: a nanoGPT-style causal self-attention (one fused
``c_attn`` Linear, heads made by ``view`` and ``transpose``) and
``torch.nn.MultiheadAttention`` (fused ``in_proj_weight``, ``out_proj``). A third
test checks grouped-query attention against ``F.scaled_dot_product_attention(...,
enable_gqa=True)``. A torch ``Linear`` stores its weight as (out, in), so our
``W`` (in, out) is ``weight.T``. The book shows the functions of this file.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

TOL = 1e-10


class CausalSelfAttention(nn.Module):
    """nanoGPT's layout: one Linear makes q, k and v; view + transpose makes the heads."""

    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.c_attn = nn.Linear(d, 3 * d)  # weight (3d, d): W_Q, W_K, W_V stacked, transposed
        self.c_proj = nn.Linear(d, d)  # weight (d, d) = W_O transposed

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)  # (B, T, 3d) -> 3 x (B, T, d)
        q, k, v = (z.view(B, T, self.h, d // self.h).transpose(1, 2)  # (B, T, d) -> (B, h, T, d_k)
                   for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, h, T, d_k)
        y = y.transpose(1, 2).contiguous().view(B, T, d)  # (B, h, T, d_k) -> (B, T, h*d_k)
        return self.c_proj(y)  # (B, T, d)


def weights_from_nanogpt(module):
    """Our W_Q, W_K, W_V, W_O and biases from a CausalSelfAttention."""
    W = module.c_attn.weight.detach().numpy().T  # (3d, d) -> (d, 3d) = [W_Q | W_K | W_V]
    b = module.c_attn.bias.detach().numpy()  # (3d,) = [b_Q | b_K | b_V]
    W_Q, W_K, W_V = np.split(W, 3, axis=1)
    b_Q, b_K, b_V = np.split(b, 3)
    return dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=module.c_proj.weight.detach().numpy().T,
                b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=module.c_proj.bias.detach().numpy())


def weights_from_torch_mha(module):
    """Our W_Q, W_K, W_V, W_O and biases from a torch.nn.MultiheadAttention."""
    W_in = module.in_proj_weight.detach().numpy()  # (3d, d): rows of q, then k, then v
    b_in = module.in_proj_bias.detach().numpy()  # (3d,)
    W_Q, W_K, W_V = (w.T for w in np.split(W_in, 3, axis=0))  # each (d, d) -> (d, d), transposed
    b_Q, b_K, b_V = np.split(b_in, 3)
    return dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=module.out_proj.weight.detach().numpy().T,
                b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=module.out_proj.bias.detach().numpy())


def random_input(B, T, d, seed):
    return np.random.default_rng(seed).normal(size=(B, T, d))


layer = st.tuples(st.integers(1, 3), st.integers(1, 9), st.sampled_from([1, 2, 3, 4]),
                  st.integers(1, 5), st.integers(0, 2**16))


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@settings(max_examples=25, deadline=None)
@given(layer)
def test_nanogpt_causal_self_attention(sizes):
    B, T, h, d_k, seed = sizes
    d = h * d_k
    torch.manual_seed(seed)
    module = CausalSelfAttention(d, h).double()
    X = random_input(B, T, d, seed)
    with torch.no_grad():
        expected = module(torch.from_numpy(X)).numpy()
    Y, _ = mha.multi_head_attention(X, **weights_from_nanogpt(module), h=h, causal=True)
    np.testing.assert_allclose(Y, expected, rtol=0, atol=TOL)


@settings(max_examples=25, deadline=None)
@given(layer, st.booleans())
def test_torch_multihead_attention(sizes, causal):
    B, T, h, d_k, seed = sizes
    d = h * d_k
    torch.manual_seed(seed)
    module = nn.MultiheadAttention(d, h, bias=True, batch_first=True).double()
    X = random_input(B, T, d, seed)
    x = torch.from_numpy(X)
    blocked = torch.from_numpy(~mha.causal_mask(T)) if causal else None  # torch: True = may NOT attend
    with torch.no_grad():
        expected, weights = module(x, x, x, attn_mask=blocked, need_weights=True,
                                   average_attn_weights=False)
    Y, A = mha.multi_head_attention(X, **weights_from_torch_mha(module), h=h, causal=causal)
    np.testing.assert_allclose(Y, expected.numpy(), rtol=0, atol=TOL)
    np.testing.assert_allclose(A, weights.numpy(), rtol=0, atol=TOL)  # (B, h, T, T) both


@settings(max_examples=25, deadline=None)
@given(layer, st.integers(1, 3))
def test_grouped_query_attention(sizes, group):
    B, T, g, d_k, seed = sizes
    h = g * group  # each key/value head serves `group` query heads
    d = 6
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(B, T, d))
    W = dict(W_Q=rng.normal(size=(d, h * d_k)), W_K=rng.normal(size=(d, g * d_k)),
             W_V=rng.normal(size=(d, g * d_k)), W_O=rng.normal(size=(h * d_k, d)))
    W_Q, W_K, W_V, W_O = (torch.from_numpy(w) for w in W.values())
    x = torch.from_numpy(X)
    q = (x @ W_Q).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    k = (x @ W_K).view(B, T, g, d_k).transpose(1, 2)  # (B, g, T, d_k)
    v = (x @ W_V).view(B, T, g, d_k).transpose(1, 2)  # (B, g, T, d_k)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, h, T, d_k)
    expected = (y.transpose(1, 2).reshape(B, T, h * d_k) @ W_O).numpy()
    Y, _ = mha.multi_head_attention(X, **W, h=h, n_kv_heads=g, causal=True)
    np.testing.assert_allclose(Y, expected, rtol=0, atol=TOL)


def test_chunked_attention_matches_torch_sdpa():
    rng = np.random.default_rng(7)
    Q, K, V = (rng.normal(size=(2, 3, 50, 8)) for _ in range(3))
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)),
                                              is_causal=True).numpy()
    np.testing.assert_allclose(mha.attention_chunked(Q, K, V, block=16, causal=True), expected,
                               rtol=0, atol=TOL)
