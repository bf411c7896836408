"""mha.costs: every count checked against the arrays the library really builds."""

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha.costs import (A100, MODELS, Machine, attention_flops, attention_param_count, decode_flop_per_byte,
                       get_model, gpt2_param_count, kv_cache_bytes, kv_cache_bytes_per_token,
                       mlp_param_count, score_entries)

BIB = Path(__file__).resolve().parents[2] / "references.bib"


@st.composite
def layer_sizes(draw):
    """(d, h, d_k, g) with g dividing h; d_k free (h * d_k need not equal d)."""
    g = draw(st.integers(1, 4))
    h = g * draw(st.integers(1, 3))
    return draw(st.integers(1, 12)), h, draw(st.integers(1, 5)), g


def random_layer(d, h, d_k, g, T=3, bias=False, seed=0):
    rng = np.random.default_rng(seed)
    W = dict(W_Q=rng.normal(size=(d, h * d_k)), W_K=rng.normal(size=(d, g * d_k)),
             W_V=rng.normal(size=(d, g * d_k)), W_O=rng.normal(size=(h * d_k, d)))
    b = dict(b_Q=rng.normal(size=h * d_k), b_K=rng.normal(size=g * d_k),
             b_V=rng.normal(size=g * d_k), b_O=rng.normal(size=d)) if bias else {}
    return rng.normal(size=(T, d)), W, b


# ---- parameters -----------------------------------------------------------------------------

def test_gpt2_small_layer_and_model():
    assert attention_param_count(768, 12, bias=True) == 2_362_368
    assert attention_param_count(768, 12) == 4 * 768**2
    assert gpt2_param_count() == 124_439_808  # the released GPT-2 small checkpoint


def test_gemma_7b_wide_heads():
    # h * d_k = 4096 > d = 3072: four matrices of 3072 x 4096, not 4 * 3072**2
    assert attention_param_count(3072, 16, d_k=256) == 4 * 3072 * 4096
    assert attention_param_count(3072, 16, d_k=256) != 4 * 3072**2


@settings(max_examples=40, deadline=None)
@given(layer_sizes(), st.booleans())
def test_count_equals_the_arrays_the_layer_accepts(sizes, bias):
    d, h, d_k, g = sizes
    X, W, b = random_layer(d, h, d_k, g, bias=bias)
    Y, _ = mha.multi_head_attention(X, **W, h=h, n_kv_heads=g, **b)  # the shapes are valid
    assert Y.shape == X.shape
    n_arrays = sum(a.size for a in W.values()) + sum(a.size for a in b.values())
    assert attention_param_count(d, h, d_k=d_k, bias=bias, n_kv_heads=g) == n_arrays


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24]), st.integers(1, 8), st.booleans())
def test_heads_are_free_at_fixed_width(h, d_k, bias):
    d = h * d_k
    assert attention_param_count(d, h, bias=bias) == 4 * d * d + (4 * d if bias else 0)
    assert attention_param_count(d, h, bias=bias) == attention_param_count(d, 1, bias=bias)


def test_grouped_query_shrinks_only_keys_and_values():
    mha_count = attention_param_count(8192, 64)
    gqa_count = attention_param_count(8192, 64, n_kv_heads=8)
    assert mha_count - gqa_count == 2 * 8192 * (64 - 8) * 128
    assert attention_param_count(8192, 64, n_kv_heads=64) == mha_count


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((10, 3), {}, ValueError, "d_k"),
    ((12, 4), {"n_kv_heads": 3}, ValueError, "n_kv_heads=3"),
    ((12, 4), {"bias": 1}, TypeError, "bias"),
    ((0, 4), {}, ValueError, "d"),
    ((12.0, 4), {}, TypeError, "d"),
    ((12, 4), {"d_k": -1}, ValueError, "d_k"),
])
def test_param_count_rejects_bad_sizes(args, kwargs, error, words):
    with pytest.raises(error, match=words):
        attention_param_count(*args, **kwargs)


# ---- FLOPs ----------------------------------------------------------------------------------

def matmul_flops_of_the_layer(X, W, s):
    """2*m*k*n for every product the layer computes, read off the arrays it produced."""
    T, d = X.shape
    total = sum(2 * T * d * W[name].shape[1] for name in ("W_Q", "W_K", "W_V"))
    total += 2 * T * s.concat.shape[-1] * W["W_O"].shape[1]
    h, _, S = s.scores.shape
    scores = 2 * h * T * S * s.Q_heads.shape[-1]
    weighted = 2 * h * T * S * s.head_outputs.shape[-1]
    return total, scores, weighted


@settings(max_examples=40, deadline=None)
@given(layer_sizes(), st.integers(1, 6))
def test_flops_match_the_products_the_library_computes(sizes, T):
    d, h, d_k, g = sizes
    X, W, _ = random_layer(d, h, d_k, g, T=T)
    s = mha.attention_steps(X, **W, h=h, n_kv_heads=g)
    f = attention_flops(T, d, h, d_k=d_k, n_kv_heads=g)
    assert (f.projections, f.scores, f.weighted_sum) == matmul_flops_of_the_layer(X, W, s)
    assert f.total == f.projections + f.scores + f.weighted_sum


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4096), st.sampled_from([1, 2, 3, 4, 6, 8, 12]), st.integers(1, 64))
def test_heads_cancel_in_the_flops(T, h, d_k):
    d = h * d_k
    f = attention_flops(T, d, h)
    assert f.projections == 8 * T * d * d
    assert f.scores == f.weighted_sum == 2 * T * T * d
    assert f == attention_flops(T, d, 1)


def test_flops_reject_bad_sizes():
    with pytest.raises(ValueError, match="T"):
        attention_flops(0, 8, 2)
    with pytest.raises(ValueError, match="n_kv_heads"):
        attention_flops(4, 8, 2, n_kv_heads=3)


# ---- memory ---------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(layer_sizes(), st.integers(1, 5))
def test_score_entries_and_kv_bytes_match_the_arrays(sizes, T):
    d, h, d_k, g = sizes
    X, W, _ = random_layer(d, h, d_k, g, T=T)
    s = mha.attention_steps(X.astype(np.float32), **{k: v.astype(np.float32) for k, v in W.items()},
                            h=h, n_kv_heads=g)
    assert score_entries(T, h) == s.scores.size == s.weights.size
    assert score_entries(T, h, batch=3) == 3 * s.scores.size
    # the cache keeps K and V of every token: that is what X @ W_K and X @ W_V produce
    assert s.K.dtype == np.float32
    assert kv_cache_bytes_per_token(g, d_k, bytes_per_value=4) * T == s.K.nbytes + s.V.nbytes
    assert kv_cache_bytes(5, g, d_k, T, batch=2, bytes_per_value=4) == 5 * 2 * (s.K.nbytes + s.V.nbytes)


def test_score_entries_grow_with_heads_at_fixed_width():
    assert score_entries(1024, 12) == 12 * 1024**2
    assert score_entries(1024, 48) == 4 * score_entries(1024, 12)


def test_kv_cache_of_llama2_70b():
    per_token = kv_cache_bytes_per_token(8, 128)  # 16-bit numbers by default
    assert per_token == 2 * 8 * 128 * 2
    assert get_model("Llama 2 70B").kv_cache_bytes(4096) == 80 * 4096 * per_token == 1.25 * 2**30


def test_kv_cache_rejects_bad_sizes():
    with pytest.raises(ValueError, match="bytes_per_value"):
        kv_cache_bytes_per_token(8, 128, bytes_per_value=0)
    with pytest.raises(TypeError, match="T"):
        kv_cache_bytes(80, 8, 128, 4096.0)


# ---- published models -----------------------------------------------------------------------

def test_models_kinds_and_shapes():
    kinds = {m.name: m.kind for m in MODELS}
    assert kinds == {"GPT-2 small": "MHA", "Gemma 2B": "MQA", "Gemma 7B": "MHA",
                     "LLaMA 65B": "MHA", "Llama 2 70B": "GQA", "GPT-3 175B": "MHA"}
    for m in MODELS:
        assert m.h % m.n_kv_heads == 0
        assert m.params_per_layer == attention_param_count(m.d, m.h, m.d_k, m.bias, m.n_kv_heads)
        assert m.kv_cache_bytes() == kv_cache_bytes(m.n_layers, m.n_kv_heads, m.d_k, m.context)
    assert get_model("GPT-2 small").params_per_layer == 2_362_368
    assert get_model("Gemma 7B").h * get_model("Gemma 7B").d_k == 4096


def test_same_shape_grouped_query_cache_is_h_over_g_times_smaller():
    llama, llama2 = get_model("LLaMA 65B"), get_model("Llama 2 70B")
    assert (llama.n_layers, llama.d, llama.h, llama.d_k) == (llama2.n_layers, llama2.d, llama2.h, llama2.d_k)
    assert llama.kv_cache_bytes(4096) == 8 * llama2.kv_cache_bytes(4096)


def test_every_model_cites_a_reference_in_the_bibliography():
    keys = set(re.findall(r"^@\w+\{([^,]+),", BIB.read_text(encoding="utf-8"), flags=re.M))
    for m in MODELS:
        assert m.source in keys, f"{m.name}: {m.source} is not in references.bib"


def test_gpt3_attention_is_a_third_of_its_parameters():
    gpt3 = get_model("GPT-3 175B")
    assert (gpt3.n_layers, gpt3.d, gpt3.h, gpt3.d_k) == (96, 12288, 96, 128)  # Brown et al. (2020), Table 2.1
    attention = gpt3.n_layers * gpt3.params_per_layer
    total = gpt2_param_count(gpt3.n_layers, gpt3.d, n_ctx=gpt3.context)
    assert round(attention / 1e9) == 58 and round(total / 1e9) == 175
    d = gpt3.d
    assert gpt3.params_per_layer == 4 * d * d + 4 * d and mlp_param_count(d) == 8 * d * d + 5 * d
    assert 0.33 < attention / total < 0.34


def test_mlp_param_count():
    assert mlp_param_count(4, d_ff=6, bias=False) == 48
    assert mlp_param_count(4, d_ff=6) == 48 + 6 + 4
    with pytest.raises(ValueError, match="d_ff"):
        mlp_param_count(4, d_ff=0)
    with pytest.raises(TypeError, match="bias"):
        mlp_param_count(4, bias="no")


def test_decode_flop_per_byte_counts_a_decoding_step():
    for m in MODELS:
        per_cached_token = 4 * m.h * m.d_k  # h scores and h weighted sums
        read = kv_cache_bytes_per_token(m.n_kv_heads, m.d_k)
        assert decode_flop_per_byte(m.h, m.n_kv_heads) == pytest.approx(per_cached_token / read)
    assert decode_flop_per_byte(64, 64) == 1.0
    with pytest.raises(ValueError, match="n_kv_heads"):
        decode_flop_per_byte(8, 0)


def test_a100_balance_and_machine_checks():
    assert A100.flop_per_byte == pytest.approx(312e12 / 2.039e12)
    assert 140 < A100.flop_per_byte < 160
    assert Machine("x", 10, 5).flop_per_byte == 2.0
    with pytest.raises(ValueError, match="bytes_per_s"):
        Machine("x", 1.0, 0.0)
    with pytest.raises(ValueError, match="flops_per_s"):
        Machine("x", float("nan"), 1.0)
    with pytest.raises(TypeError, match="name"):
        Machine(3, 1.0, 1.0)


def test_unknown_model_is_named():
    with pytest.raises(ValueError, match="GPT-5"):
        get_model("GPT-5")


# ---- measurement helpers (mha.timing) -------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 6), st.integers(0, 999))
def test_loop_over_heads_equals_the_batched_layer(h, d_k, d_v, T, seed):
    from mha.attention import multi_head_attention_loop
    rng = np.random.default_rng(seed)
    d = 5
    X = rng.normal(size=(2, T, d))
    W = (rng.normal(size=(d, h * d_k)), rng.normal(size=(d, h * d_k)), rng.normal(size=(d, h * d_v)),
         rng.normal(size=(h * d_v, 3)))
    Y, _ = mha.multi_head_attention(X, *W, h=h)
    np.testing.assert_allclose(multi_head_attention_loop(X, *W, h), Y, rtol=0, atol=1e-12)


def test_loop_over_heads_names_bad_input():
    from mha.attention import multi_head_attention_loop
    W = np.ones((4, 4))
    with pytest.raises(ValueError, match="h=3"):
        multi_head_attention_loop(np.ones((2, 4)), W, W, W, W, 3)
    with pytest.raises(ValueError, match="d_model=5"):
        multi_head_attention_loop(np.ones((2, 5)), W, W, W, W, 2)
    with pytest.raises(TypeError, match="W_V"):
        multi_head_attention_loop(np.ones((2, 4)), W, W, None, W, 2)


def test_peak_bytes_sees_numpy_arrays_and_best_time_is_positive():
    from mha.timing import best_time, peak_bytes
    result, peak = peak_bytes(np.ones, (500, 500))
    assert result.shape == (500, 500)
    assert 500 * 500 * 8 <= peak < 2 * 500 * 500 * 8
    assert 0 < best_time(np.ones, (10, 10), repeat=2, number=3) < 1
    with pytest.raises(TypeError, match="callable"):
        peak_bytes(42)
    with pytest.raises(ValueError, match="repeat"):
        best_time(np.ones, 3, repeat=0)


def test_best_times_runs_every_function_in_turn():
    from mha.timing import best_times
    calls = []
    t = best_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeat=3)
    assert calls == ["a", "b"] * 3
    assert set(t) == {"a", "b"} and all(v >= 0 for v in t.values())
    with pytest.raises(TypeError, match="dict"):
        best_times([np.ones])
    with pytest.raises(ValueError, match="repeat"):
        best_times({"a": np.ones}, repeat=0)
