"""The production layouts of PyTorch map exactly onto mha's W_Q, W_K, W_V, W_O.

PyTorch is the outside oracle here (float64, to 1e-10). Two modules are compared with
``mha.multi_head_attention``: a nanoGPT-style causal self-attention (one fused
``c_attn`` Linear, heads made by ``view`` and ``transpose``) and
``torch.nn.MultiheadAttention`` (fused ``in_proj_weight``, ``out_proj``). A third
test checks grouped-query attention against ``F.scaled_dot_product_attention(...,
enable_gqa=True)``. The layouts and their weight mappings are book code
(``book/code/production_layouts.py``, shown in chapter 08); this file runs them.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

_LAYOUTS = Path(__file__).resolve().parents[2] / "book" / "code" / "production_layouts.py"
_spec = importlib.util.spec_from_file_location("production_layouts", _LAYOUTS)
production_layouts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(production_layouts)
CausalSelfAttention = production_layouts.CausalSelfAttention
weights_from_nanogpt = production_layouts.weights_from_nanogpt
weights_from_torch_mha = production_layouts.weights_from_torch_mha

TOL = 1e-10


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
