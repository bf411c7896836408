"""SmolLM2-135M in NumPy against outside oracles (test-only): transformers' GGUF loader with PyTorch,
the `gguf` package's dequantisation, and the `tokenizers` package's byte-level BPE."""

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may come from a model hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mha.models import package_dir, smollm2  # noqa: E402
from mha.models.gguf_file import dequantize  # noqa: E402

PATH = package_dir(smollm2.PACKAGE) / smollm2.FILENAME
TEXT = "Once upon a time, a small fox lived at the edge of a quiet forest. Every morning she walked to the river."

TOKENIZER_STRINGS = [
    TEXT, "", "It's 2024: prices rose 3.5% (sharply)!", "  leading   spaces and trailing  ",
    "tab\there\nnew line\n\n", "Café naïve — “quotes” 日本語 😀 emoji", "<|im_start|>user\nHi there<|im_end|>",
    "def f(x):\n    return x**2  # comment", "I've, you'll, they'd, she's, we're", "½ ² Ⅻ ٣ numerals",
    "\u00a0nbsp and\u3000ideographic", "a" * 40, "https://example.com/a_b?c=1&d=2", "ALLCAPS CamelCase snake_case",
]


@pytest.fixture(scope="module")
def model():
    return smollm2.load()


@pytest.fixture(scope="module")
def reference_tokenizer(model):
    """SmolLM2's published tokenizer settings (digits one by one, then GPT-2's byte-level split),
    built in the `tokenizers` package from the GGUF vocabulary and merges."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    md = model.file.metadata
    tokens = md["tokenizer.ggml.tokens"]
    ref = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)},
                               [tuple(m.split(" ")) for m in md["tokenizer.ggml.merges"]]))
    ref.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    ref.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t, kind in zip(tokens, md["tokenizer.ggml.token_type"]) if kind == 3])
    return ref


@pytest.fixture(scope="module")
def reference_model():
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(PATH.parent), gguf_file=PATH.name, dtype=torch.float32,
                                                attn_implementation="eager", local_files_only=True).eval()


# ---- tokenizer --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", TOKENIZER_STRINGS)
def test_bpe_matches_the_reference_tokenizer(model, reference_tokenizer, text):
    assert model.encode(text).tolist() == reference_tokenizer.encode(text).ids


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x2FFF, exclude_categories=("Cs", "Co", "Cn")), max_size=30))
@example(text="\x92'°\x13.p")  # the byte 0x13 is dropped before merging, so "Â°" and "." merge (found by this test)
def test_bpe_matches_the_reference_on_random_text(model, reference_tokenizer, text):
    assert model.encode(text).tolist() == reference_tokenizer.encode(text).ids


def test_bytes_missing_from_the_vocabulary_are_dropped_like_the_reference(model, reference_tokenizer):
    text = "a\x06b\x04"  # SmolLM2's vocabulary has no token for the bytes 4 and 6
    expected = model.encode("a").tolist() + model.encode("b").tolist()
    assert model.encode(text).tolist() == reference_tokenizer.encode(text).ids == expected


def test_a_dropped_byte_lets_its_neighbours_merge():
    from mha.models.bpe import ByteBPE

    tok = ByteBPE([".", ",", ".,"], [". ,"])  # no token for the byte 0x13
    assert tok.pre_tokenize(".\x13,") == [".\x13,"]  # one piece: three marks that are not letters, digits or space
    assert tok.tokenize(".\x13,") == [".,"]


def test_bpe_decodes_back_to_the_text(model):
    for text in TOKENIZER_STRINGS:
        assert model.tokenizer.decode(model.encode(text)) == text
    assert model.tokenizer.show("Ġfox") == " fox"


def test_transformers_gguf_tokenizer_agrees_on_text_without_digits(model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(PATH.parent), gguf_file=PATH.name, local_files_only=True)
    for text in (TEXT, "Hello there, how are you?", "Café naïve — “quotes”"):
        assert model.encode(text).tolist() == tok(text, add_special_tokens=False)["input_ids"]


# ---- GGUF reader ------------------------------------------------------------------------------

def test_gguf_metadata_and_grouped_query_shapes(model):
    assert (model.L, model.d, model.h, model.g, model.d_k) == (30, 576, 9, 3, 64)
    w = model.weights(0)
    assert w.W_Q.shape == (576, 576) and w.W_K.shape == (576, 192) and w.W_V.shape == (576, 192)
    assert w.W_O.shape == (576, 576) and w.W_gate.shape == (576, 1536) and w.W_down.shape == (1536, 576)


def test_dequantisation_matches_the_gguf_package(model):
    from gguf import GGUFReader
    from gguf import quants

    reader = GGUFReader(str(PATH))
    seen = set()
    for t in reader.tensors:
        kind = t.tensor_type.name
        if kind in seen and not t.name.startswith("blk.29"):
            continue
        seen.add(kind)
        expected = quants.dequantize(t.data, t.tensor_type)
        got = model.file.array(t.name)
        np.testing.assert_array_equal(got, expected.reshape(got.shape), err_msg=t.name)
    assert {"Q4_1", "Q8_0", "F32"} <= seen


def test_q4_0_and_f16_blocks():
    d = np.float16(0.25)
    q = np.arange(32) % 16  # numbers 0..15, twice
    packed = (q[:16] | (q[16:] << 4)).astype(np.uint8)
    block = np.frombuffer(np.array([d], "<f2").tobytes() + packed.tobytes(), np.uint8)
    np.testing.assert_array_equal(dequantize(block[None], 2)[0], (q - 8) * np.float32(0.25))
    halves = np.array([1.5, -2.0], "<f2")
    np.testing.assert_array_equal(dequantize(np.frombuffer(halves.tobytes(), np.uint8)[None], 1), [[1.5, -2.0]])


# ---- forward pass vs the oracle -----------------------------------------------------------------

def test_logits_and_attention_match_transformers(model, reference_model):
    import torch

    ids = model.encode(TEXT)
    with torch.no_grad():
        out = reference_model(torch.tensor(ids[None]), output_attentions=True)
    expected = out.logits.numpy()
    got = model.logits(ids)
    assert got.shape == expected.shape == (1, len(ids), 49152)
    np.testing.assert_allclose(got, expected, atol=1e-3, rtol=0)
    run = model.run(ids, keep_attention=True)
    for layer in (0, 1, 15, 29):
        np.testing.assert_allclose(run.attentions[layer], out.attentions[layer].numpy(), atol=1e-4, rtol=0,
                                   err_msg=f"layer {layer}")
    lp = torch.log_softmax(out.logits[0, :-1], -1).numpy()
    ref_ppl = np.exp(-lp[np.arange(len(ids) - 1), ids[1:]].mean())
    assert model.perplexity(ids)[0] == pytest.approx(ref_ppl, rel=1e-4)


def test_blockwise_nll_equals_log_softmax_of_the_logits(model):
    ids = model.encode("The cat sat on the mat.")
    L = model.logits(ids)[0].astype(np.float64)
    log_p = L - L.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    expected = -log_p[np.arange(len(ids) - 1), ids[1:]]
    np.testing.assert_allclose(model.nll(ids)[0], expected, atol=1e-4)


def test_ablation_sweep_equals_removing_each_head_alone(model):
    ids = model.encode("The cat sat on the mat. It was warm.")
    sweep = model.ablation_sweep(ids, [28, 3])
    assert sweep.shape == (2, 9)
    for row, layer in enumerate([3, 28]):  # layers come back sorted
        for head in (0, 4, 8):
            alone = model.perplexity(ids, remove=[(layer, head)])[0]
            assert sweep[row, head] == pytest.approx(alone, rel=1e-4)
    assert not np.allclose(sweep, model.perplexity(ids)[0])


def test_causal_attention_and_kv_sharing(model):
    ids = model.encode("One two three four five")
    run = model.run(ids, keep_attention=True)
    A = run.attentions[5][0]  # (h, T, T)
    assert np.all(np.triu(A, k=1) == 0)
    np.testing.assert_allclose(A.sum(-1), 1, atol=1e-5)
    prefix = model.run(ids[:3], keep_attention=True)  # causal: the future cannot change the past
    np.testing.assert_allclose(prefix.attentions[5][0], A[:, :3, :3], atol=1e-5)


def test_input_is_validated(model):
    with pytest.raises(ValueError, match="from 0 to 49151"):
        model.run(np.array([1, 49152]))
    with pytest.raises(TypeError, match="array of integers"):
        model.run(np.array([1.5, 2.0]))
    with pytest.raises(ValueError, match="head 9"):
        model.run(np.array([1, 2]), remove=[(0, 9)])
    with pytest.raises(ValueError, match="layer 30"):
        model.ablation_sweep(np.array([1, 2, 3]), [30])


def test_rope_rotates_pairs_and_keeps_relative_scores():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=8), rng.normal(size=8)
    Q = np.tile(q, (6, 1))[None]  # the same vector at positions 0..5
    K = np.tile(k, (6, 1))[None]
    Qr, Kr = smollm2.rope(Q, 10000.0)[0], smollm2.rope(K, 10000.0)[0]
    scores = Qr @ Kr.T
    for shift in range(1, 3):  # the score depends only on t - s
        np.testing.assert_allclose(np.diagonal(scores, -shift)[:-1], np.diagonal(scores, -shift)[1:], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(Qr, axis=-1), np.linalg.norm(q), atol=1e-12)


def test_rms_norm_and_silu_pieces():
    x = np.array([[1.0, -2.0, 2.0]])
    np.testing.assert_allclose(smollm2.rms_norm(x, np.ones(3), 0.0), x / np.sqrt(3.0))
    with np.errstate(all="raise"):
        y = smollm2.silu(np.array([-1e4, -50.0, 0.0, 50.0], dtype=np.float32))
    np.testing.assert_allclose(y, [0.0, -50 / (1 + np.exp(50)), 0.0, 50.0], atol=1e-12)


# ---- bad input, by kind ---------------------------------------------------------------------------

def test_a_loss_needs_two_tokens(model):
    one = model.encode("Hello")
    assert len(one) == 1
    for call in (model.perplexity, model.nll, lambda ids: model.ablation_sweep(ids, [0]),
                 lambda ids: model.run_nll(model.run(ids))):
        with pytest.raises(ValueError, match="at least 2"):
            call(one)
    with pytest.raises(TypeError, match="run must be a Run"):
        model.run_nll(one)


@pytest.mark.parametrize("ids, error, message", [
    (np.array([], dtype=np.int64), ValueError, "empty"),
    (np.zeros((0, 4), dtype=np.int64), ValueError, "empty"),
    (np.zeros((1, 1, 4), dtype=np.int64), ValueError, r"\(T,\) or \(B, T\)"),
    (np.array([1, -1]), ValueError, "holds -1 at index \\(1,\\)"),
    (np.array([True, False]), TypeError, "array of integers"),
    (np.array([1.0, 2.0]), TypeError, "array of integers"),
    ([[1, 2], [3]], ValueError, "rectangular"),
    (np.array([1, 2], dtype=np.uint64) * 2**62, ValueError, "from 0 to 49151"),
])
def test_token_ids_are_checked(model, ids, error, message):
    with pytest.raises(error, match=message):
        model.run(ids)


def test_flags_and_lists_are_checked(model):
    ids = np.array([1, 2])
    for flag in (1, "False", None, np.array([True])):
        with pytest.raises(TypeError, match="keep_attention must be True or False"):
            model.run(ids, keep_attention=flag)
    with pytest.raises(TypeError, match="remove must be an iterable"):
        model.run(ids, remove=5)
    with pytest.raises(TypeError, match="layers must be an iterable"):
        model.ablation_sweep(ids, 3)
    with pytest.raises(ValueError, match="i=30 is out of range"):
        model.weights(30)
    with pytest.raises(TypeError, match="gguf must be a GGUFFile"):
        smollm2.SmolLM2("weights.gguf")


def test_a_lone_surrogate_is_named_with_its_position(model):
    with pytest.raises(ValueError, match="text holds a lone surrogate U\\+D800 at position 3"):
        model.encode("abc\ud800def")
    with pytest.raises(ValueError, match="position 0"):
        model.perplexity("\udfff and more")
    with pytest.raises(ValueError, match="ids .* holds 49152"):
        model.tokenizer.decode([1, 49152])


def test_text_past_the_trained_context_is_refused(model):
    assert model.context_length == model.file.metadata["llama.context_length"] == 8192
    model._ids(np.ones(8192, dtype=np.int64))  # the longest allowed passes the check
    with pytest.raises(ValueError, match="8193 tokens.*at most 8192"):
        model.run(np.ones(8193, dtype=np.int64))


def test_missing_metadata_is_a_gguf_error(tmp_path):
    import struct

    from mha.models.gguf_file import GGUFError, read_gguf

    path = tmp_path / "empty.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 0))
    with pytest.raises(GGUFError, match="'general.architecture' must be a str"):
        smollm2.SmolLM2(read_gguf(path))


def test_grouped_heads_read_their_shared_key_value_head(model):
    """Each query head's output equals plain attention on its own key/value head, i // (h / g)."""
    from mha.attention import causal_mask, scaled_dot_product_attention, split_heads

    ids = model.encode("The cat sat on the mat.")
    w = model.weights(2)
    x = model.file.array("token_embd.weight", rows=ids)[None]  # (1, T, d)
    concat, A = model.attention_heads(x, w)
    a = smollm2.rms_norm(x, w.attn_norm, model.eps)
    Q = smollm2.rope(split_heads(a @ w.W_Q, model.h), model.rope_base)
    K = smollm2.rope(split_heads(a @ w.W_K, model.g), model.rope_base)
    V = split_heads(a @ w.W_V, model.g)
    r, mask = model.h // model.g, causal_mask(len(ids))
    for i in range(model.h):
        Z_i, A_i = scaled_dot_product_attention(Q[:, i], K[:, i // r], V[:, i // r], mask=mask)
        np.testing.assert_allclose(A[:, i], A_i, atol=1e-6, err_msg=f"head {i}")
        np.testing.assert_allclose(concat[..., i * model.d_k:(i + 1) * model.d_k], Z_i, atol=1e-5)
    assert not np.allclose(A[:, 0], A[:, r])  # heads of different groups differ


def test_rope_checks_its_arguments():
    X = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="even head width"):
        smollm2.rope(np.ones((3, 5)), 10000.0)
    with pytest.raises(ValueError, match="base must be above 1"):
        smollm2.rope(X, 0.5)
    with pytest.raises(ValueError, match=r"positions must have shape \(T,\) = \(3,\)"):
        smollm2.rope(X, 10000.0, positions=[0, 1])
    with pytest.raises(ValueError, match="finite"):
        smollm2.rope(np.full((3, 4), np.nan), 10000.0)
    np.testing.assert_allclose(smollm2.rope(X, 10000.0, positions=[0, 1, 2]), smollm2.rope(X, 10000.0))
