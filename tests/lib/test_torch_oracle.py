"""PyTorch as an outside oracle for the core library (float64, CPU)."""

import numpy as np
import pytest

import mha

torch = pytest.importorskip("torch", reason="PyTorch is the test oracle: pip install -r requirements-test.txt")
F = torch.nn.functional


def torch_mha(d, h, seed):
    torch.manual_seed(seed)
    module = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True).double()
    W_in = module.in_proj_weight.detach().numpy()  # (3d, d): rows are output features
    W_Q, W_K, W_V = (W_in[i * d:(i + 1) * d].T for i in range(3))  # torch computes x @ W.T
    W_O = module.out_proj.weight.detach().numpy().T
    return module, (W_Q, W_K, W_V, W_O)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B, T, d, h", [(1, 1, 4, 1), (2, 5, 8, 2), (3, 7, 12, 4), (2, 6, 12, 12)])
def test_matches_torch_multihead_attention(B, T, d, h, causal):
    module, W = torch_mha(d, h, seed=B * 100 + T)
    X = np.random.default_rng(T).normal(size=(B, T, d))
    x = torch.from_numpy(X)
    attn_mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) if causal else None
    with torch.no_grad():
        y, a = module(x, x, x, attn_mask=attn_mask, need_weights=True, average_attn_weights=False)
    Y, A = mha.multi_head_attention(X, *W, h, causal=causal)
    np.testing.assert_allclose(Y, y.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(A, a.numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("h, g", [(4, 1), (4, 2), (6, 3), (4, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_matches_torch_sdpa(h, g, causal):
    rng = np.random.default_rng(h * 10 + g)
    B, T, d, d_k = 2, 5, 8, 3
    X = rng.normal(size=(B, T, d))
    W_Q, W_K, W_V = rng.normal(size=(d, h * d_k)), rng.normal(size=(d, g * d_k)), rng.normal(size=(d, g * d_k))
    W_O = rng.normal(size=(h * d_k, d))
    s = mha.attention_steps(X, W_Q, W_K, W_V, W_O, h, n_kv_heads=g, causal=causal)
    q, k, v = (torch.from_numpy(np.ascontiguousarray(a)) for a in (s.Q_heads, s.K_heads, s.V_heads))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    np.testing.assert_allclose(s.head_outputs, out.numpy(), rtol=0, atol=1e-10)
    # And the full layer, from torch's head outputs.
    y = out.transpose(1, 2).reshape(B, T, h * d_k).numpy() @ W_O
    np.testing.assert_allclose(s.output, y, rtol=0, atol=1e-10)


def test_mask_matches_torch_sdpa():
    rng = np.random.default_rng(7)
    Q, K, V = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 6, 3)), rng.normal(size=(2, 6, 2))
    mask = rng.random((4, 6)) < 0.5
    mask[:, 0] = True
    out, _ = mha.scaled_dot_product_attention(Q, K, V, mask=mask)
    ref = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V)),
                                         attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out, ref.numpy(), rtol=0, atol=1e-10)
