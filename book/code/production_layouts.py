"""The production layouts of PyTorch, mapped onto the book's ``W_Q``, ``W_K``, ``W_V``, ``W_O``.

The appendix 13_costs_measured shows these listings (``literalinclude``); it does not run them, since PyTorch
is not needed to read the book. ``tests/lib/test_production_shape.py`` imports them and checks,
with PyTorch as an outside oracle, that both layouts give ``mha.multi_head_attention``'s
output (in float64, to 1e-10). A torch ``Linear`` stores its weight as (out, in), so our ``W`` (in, out)
is ``weight.T``.
"""

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


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
