"""What one multi-head attention layer costs, counted exactly.

Parameters, floating-point operations (FLOPs), the memory of the score
matrices and the key/value (KV) cache, for the layer that
:func:`mha.multi_head_attention` computes. A multiply-add counts as 2 FLOPs.
``MODELS`` holds the attention shapes of a few published models, each with
the key of the reference that gives it. ``Machine`` pairs an arithmetic rate
with a memory speed; ``A100`` holds a data-centre GPU's published figures.

Shape legend: ``T`` positions, ``d`` model width, ``h`` query heads,
``g`` key/value heads (``n_kv_heads``), ``d_k`` head width (``d_v = d_k``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import check_flag, check_number, check_positive_int, check_text

__all__ = [
    "A100",
    "AttentionFlops",
    "Machine",
    "ModelConfig",
    "MODELS",
    "attention_flops",
    "attention_param_count",
    "decode_flop_per_byte",
    "get_model",
    "gpt2_param_count",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "mlp_param_count",
    "score_entries",
]


def _head_sizes(d, h, d_k, n_kv_heads):
    """Check the layer's sizes; return ``(d, h, d_k, g)`` as ints."""
    d = check_positive_int(d, "d")
    h = check_positive_int(h, "h")
    if d_k is None:
        if d % h:
            raise ValueError(f"d_k defaults to d // h, but h={h} does not divide d={d}; pass d_k explicitly")
        d_k = d // h
    else:
        d_k = check_positive_int(d_k, "d_k")
    g = h if n_kv_heads is None else check_positive_int(n_kv_heads, "n_kv_heads")
    if h % g:
        raise ValueError(f"n_kv_heads={g} must divide h={h} (each key/value head serves h/n_kv_heads query heads)")
    return d, h, d_k, g


def attention_param_count(d, h,  # model width, query heads
                          d_k=None, bias=False, n_kv_heads=None):
    r"""Number of trainable parameters in one attention layer.

    .. math::
        N = \underbrace{d\,h\,d_k}_{W_Q} + \underbrace{2\,d\,g\,d_k}_{W_K,\ W_V}
            + \underbrace{h\,d_k\,d}_{W_O}
            \;\big[ + \underbrace{h\,d_k + 2\,g\,d_k + d}_{\text{biases}} \big]

    with ``g = n_kv_heads`` and ``d_v = d_k``. When ``h * d_k = d`` and ``g = h``
    this is :math:`4d^2` (plus :math:`4d`): the number of heads does not appear.

    Parameters
    ----------
    d : int
        Model width.
    h : int
        Number of query heads.
    d_k : int, optional
        Width of one head; defaults to ``d // h`` (then ``h`` must divide ``d``).
    bias : bool
        Count the biases ``b_Q, b_K, b_V, b_O`` too.
    n_kv_heads : int, optional
        Key/value heads (default ``h``); must divide ``h``.

    Returns
    -------
    int

    Examples
    --------
    >>> attention_param_count(768, 12, bias=True)          # GPT-2 small, one layer
    2362368
    >>> attention_param_count(3072, 16, d_k=256)           # Gemma 7B: h * d_k = 4096 > d
    50331648
    >>> attention_param_count(8192, 64, n_kv_heads=8)      # Llama 2 70B, grouped-query
    150994944
    """
    d, h, d_k, g = _head_sizes(d, h, d_k, n_kv_heads)
    bias = check_flag(bias, "bias")
    weights = d * h * d_k + 2 * d * g * d_k + h * d_k * d  # W_Q + (W_K, W_V) + W_O
    biases = h * d_k + 2 * g * d_k + d if bias else 0  # b_Q + (b_K, b_V) + b_O
    return weights + biases


def mlp_param_count(d, d_ff=None, bias=True):
    r"""Parameters of a block's MLP: :math:`d \to d_\text{ff} \to d`.

    .. math::
        N = \underbrace{d\,d_\text{ff}}_{\text{up}} + \underbrace{d_\text{ff}\,d}_{\text{down}}
            \;\big[ + \underbrace{d_\text{ff} + d}_{\text{biases}} \big]

    With the usual ``d_ff = 4 d`` (the default) this is :math:`8d^2` (plus :math:`5d`),
    twice the attention layer's :math:`4d^2`.

    Examples
    --------
    >>> mlp_param_count(768)                               # GPT-2 small, one block
    4722432
    """
    d = check_positive_int(d, "d")
    d_ff = 4 * d if d_ff is None else check_positive_int(d_ff, "d_ff")
    bias = check_flag(bias, "bias")
    return d * d_ff + d_ff * d + (d_ff + d if bias else 0)  # up + down [+ b_up + b_down]


def gpt2_param_count(n_layers=12, d=768, vocab=50257, n_ctx=1024):
    r"""All parameters of a GPT-2 model (tied input and output embeddings).

    Each block holds attention (:math:`4d^2 + 4d`), an MLP of width
    :math:`4d` (:math:`8d^2 + 5d`) and two layer norms (:math:`4d`); around
    the blocks sit the token and position embeddings and a final layer norm.
    GPT-3 uses the same architecture (Brown et al., 2020), so its sizes give
    its count too.

    Examples
    --------
    >>> gpt2_param_count()                                 # GPT-2 small
    124439808
    >>> round(gpt2_param_count(96, 12288, n_ctx=2048) / 1e9, 1)  # GPT-3 175B
    174.6
    """
    n_layers, d, vocab, n_ctx = (check_positive_int(v, name) for v, name in
                                 ((n_layers, "n_layers"), (d, "d"), (vocab, "vocab"), (n_ctx, "n_ctx")))
    block = attention_param_count(d, 1, d_k=d, bias=True) + mlp_param_count(d) + 2 * 2 * d
    return n_layers * block + vocab * d + n_ctx * d + 2 * d


@dataclass(frozen=True)
class AttentionFlops:
    """FLOPs of one attention layer on one sequence, by part.

    Attributes
    ----------
    projections : int
        :math:`X W_Q`, :math:`X W_K`, :math:`X W_V` and :math:`\\text{concat}\\, W_O`.
    scores : int
        :math:`Q_i K_i^\\top` for every query head.
    weighted_sum : int
        :math:`A_i V_i` for every query head.
    """

    projections: int
    scores: int
    weighted_sum: int

    @property
    def total(self) -> int:
        return self.projections + self.scores + self.weighted_sum


def attention_flops(T, d, h, d_k=None, n_kv_heads=None):
    r"""FLOPs of one attention layer on one sequence of ``T`` tokens.

    .. math::
        F_\text{proj} = 2T\,(d\,h\,d_k + 2\,d\,g\,d_k + h\,d_k\,d), \quad
        F_\text{scores} = 2T^2 h\,d_k, \quad
        F_\text{sum} = 2T^2 h\,d_v

    A multiply-add counts as 2 FLOPs and ``d_v = d_k``. With ``h * d_k = d`` and
    ``g = h`` these are :math:`8Td^2`, :math:`2T^2 d` and :math:`2T^2 d`: the
    number of heads cancels. The full ``T x T`` score matrix is counted, as the
    library computes it even under a causal mask. The softmax (a few operations
    per score) is left out.

    Parameters
    ----------
    T : int
        Sequence length.
    d, h, d_k, n_kv_heads
        As in :func:`attention_param_count`.

    Returns
    -------
    AttentionFlops

    Examples
    --------
    >>> f = attention_flops(1024, 768, 12)                 # GPT-2 small, full context
    >>> f.projections == 8 * 1024 * 768**2, f.scores == 2 * 1024**2 * 768
    (True, True)
    """
    T = check_positive_int(T, "T")
    d, h, d_k, g = _head_sizes(d, h, d_k, n_kv_heads)
    projections = 2 * T * (d * h * d_k + 2 * d * g * d_k + h * d_k * d)
    scores = 2 * T * T * h * d_k  # h products (T, d_k) @ (d_k, T)
    weighted_sum = 2 * T * T * h * d_k  # h products (T, T) @ (T, d_v)
    return AttentionFlops(projections, scores, weighted_sum)


def score_entries(T, h, batch=1):
    """Entries of the score matrices one layer holds at once: ``batch * h * T**2``.

    Unlike parameters and FLOPs, this grows with ``h`` at fixed width.

    Examples
    --------
    >>> score_entries(1024, 12)
    12582912
    """
    T, h, batch = (check_positive_int(v, n) for v, n in ((T, "T"), (h, "h"), (batch, "batch")))
    return batch * h * T * T


def kv_cache_bytes_per_token(n_kv_heads, d_k, bytes_per_value=2):
    """Bytes one token adds to one layer's KV cache: ``2 * n_kv_heads * d_k * bytes_per_value``.

    The 2 is one key and one value vector per key/value head.

    Examples
    --------
    >>> kv_cache_bytes_per_token(8, 128)                   # Llama 2 70B, 16-bit numbers
    4096
    """
    g = check_positive_int(n_kv_heads, "n_kv_heads")
    d_k = check_positive_int(d_k, "d_k")
    b = check_positive_int(bytes_per_value, "bytes_per_value")
    return 2 * g * d_k * b


def kv_cache_bytes(n_layers, n_kv_heads, d_k, T, *, batch=1, bytes_per_value=2):
    """Bytes of the whole KV cache: every layer, ``T`` tokens, ``batch`` sequences.

    Examples
    --------
    >>> kv_cache_bytes(80, 8, 128, 4096) / 2**30           # Llama 2 70B, 4096 tokens, GiB
    1.25
    """
    n_layers = check_positive_int(n_layers, "n_layers")
    T = check_positive_int(T, "T")
    batch = check_positive_int(batch, "batch")
    return n_layers * T * batch * kv_cache_bytes_per_token(n_kv_heads, d_k, bytes_per_value)


@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of one published model.

    Attributes
    ----------
    name : str
    n_layers, d, h, n_kv_heads, d_k, context : int
        Layers, model width, query heads, key/value heads, head width and the
        context length the model was trained with.
    bias : bool
        Whether the attention projections have biases.
    source : str
        Key of the reference (in the book's ``references.bib``) that gives the shape.
    """

    name: str
    n_layers: int
    d: int
    h: int
    n_kv_heads: int
    d_k: int
    context: int
    bias: bool
    source: str

    def __post_init__(self):
        for field in ("name", "source"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(f"{field} must be a str, got {getattr(self, field)!r}")
        for field in ("n_layers", "d", "h", "n_kv_heads", "d_k", "context"):
            object.__setattr__(self, field, check_positive_int(getattr(self, field), field))
        object.__setattr__(self, "bias", check_flag(self.bias, "bias"))
        _head_sizes(self.d, self.h, self.d_k, self.n_kv_heads)  # n_kv_heads must divide h

    @property
    def kind(self) -> str:
        """ "MHA", "GQA" or "MQA" (one key/value head)."""
        if self.n_kv_heads == self.h:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def params_per_layer(self) -> int:
        return attention_param_count(self.d, self.h, self.d_k, self.bias, self.n_kv_heads)

    def kv_cache_bytes(self, T=None, *, batch=1, bytes_per_value=2):
        """KV cache of the whole model for ``T`` tokens (default: its full context)."""
        T = self.context if T is None else T
        return kv_cache_bytes(self.n_layers, self.n_kv_heads, self.d_k, T, batch=batch,
                              bytes_per_value=bytes_per_value)


#: Published attention shapes; ``source`` is the model's paper. Two shapes come from released code
#: instead, which the chapters cite: GPT-2's 12 heads (``openai2019gpt2code``) and Llama 2 70B's
#: layers, widths and key/value heads (``meta2023llamacode``).
MODELS = (
    ModelConfig("GPT-2 small", n_layers=12, d=768, h=12, n_kv_heads=12, d_k=64, context=1024,
                bias=True, source="radford2019language"),
    ModelConfig("Gemma 2B", n_layers=18, d=2048, h=8, n_kv_heads=1, d_k=256, context=8192,
                bias=False, source="gemmateam2024gemma"),
    ModelConfig("Gemma 7B", n_layers=28, d=3072, h=16, n_kv_heads=16, d_k=256, context=8192,
                bias=False, source="gemmateam2024gemma"),
    ModelConfig("LLaMA 65B", n_layers=80, d=8192, h=64, n_kv_heads=64, d_k=128, context=2048,
                bias=False, source="touvron2023llama"),
    ModelConfig("Llama 2 70B", n_layers=80, d=8192, h=64, n_kv_heads=8, d_k=128, context=4096,
                bias=False, source="touvron2023llama2"),
    ModelConfig("GPT-3 175B", n_layers=96, d=12288, h=96, n_kv_heads=96, d_k=128, context=2048,
                bias=True, source="brown2020language"),
)


def get_model(name):
    """The entry of :data:`MODELS` called ``name``.

    Examples
    --------
    >>> get_model("Llama 2 70B").kind
    'GQA'
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'GPT-2 small', got {name!r} of type {type(name).__name__}")
    for model in MODELS:
        if model.name == name:
            return model
    known = ", ".join(m.name for m in MODELS)
    raise ValueError(f"no model called {name!r}; known: {known}")


def decode_flop_per_byte(h, n_kv_heads, bytes_per_value=2):
    r"""FLOPs per byte of KV cache read when one new token attends to the cache.

    For each cached token the new token's ``h`` query heads do a score and a
    weighted sum of width ``d_k`` (:math:`4 h d_k` FLOPs) while reading one key
    and one value per key/value head (:math:`2 g d_k b` bytes):

    .. math::
        \frac{4 h d_k}{2 g d_k b} = \frac{2h}{g b}

    ``d_k`` and ``T`` cancel.

    Examples
    --------
    >>> decode_flop_per_byte(64, 8)                        # Llama 2 70B, 16-bit cache
    8.0
    """
    h = check_positive_int(h, "h")
    g = check_positive_int(n_kv_heads, "n_kv_heads")
    b = check_positive_int(bytes_per_value, "bytes_per_value")
    return 2 * h / (g * b)


@dataclass(frozen=True)
class Machine:
    """A processor's arithmetic rate and memory speed.

    Attributes
    ----------
    name : str
    flops_per_s : float
        Floating-point operations per second.
    bytes_per_s : float
        Bytes per second between the processor and its main memory.
    """

    name: str
    flops_per_s: float
    bytes_per_s: float

    def __post_init__(self):
        object.__setattr__(self, "name", check_text(self.name, "name"))
        for field in ("flops_per_s", "bytes_per_s"):
            object.__setattr__(self, field, check_number(getattr(self, field), field, low=0.0, low_open=True))

    @property
    def flop_per_byte(self) -> float:
        """FLOPs the machine can do in the time it moves one byte: ``flops_per_s / bytes_per_s``."""
        return self.flops_per_s / self.bytes_per_s


#: NVIDIA's A100 datasheet (80 GB SXM): 312 TFLOP/s on dense bfloat16 tensor-core products and
#: 2,039 GB/s of memory bandwidth.
A100 = Machine("NVIDIA A100 (80 GB SXM, bfloat16 without sparsity)", flops_per_s=312e12, bytes_per_s=2.039e12)
