"""all-MiniLM-L6-v2 in NumPy against outside oracles (test-only): the `tokenizers` package,
sentence-transformers and transformers with PyTorch, all loaded from the local weights package."""

import math
import os
import unicodedata

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may come from a model hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mha.models import minilm, package_dir  # noqa: E402
from mha.models.wordpiece import WordPiece  # noqa: E402

FOLDER = package_dir(minilm.PACKAGE) / "model"

SENTENCES = [
    "The keys to the cabinet are on the table.",
    "I love LLMs",
    "Attention is not explanation; it's a weighting, they said — twice!",
    "Café déjà vu: naïve résumés cost $1,299.99 in 2024.",
]

TOKENIZER_STRINGS = SENTENCES + [
    "", "   ", "Hello, world!", "don't stop-believing 3.14 $100 a+b=c #tag @user ~x^y|z`w",
    "日本語のテキストと中文", "emoji 😀 test 🚀", "supercalifragilisticexpialidocious", "x" * 120,
    "tab\tnew\nline\r\x00ctrl\u200bzero-width", "ÅNGSTRÖM İstanbul ß straße ﬁ ligature",
    "[CLS] inside [SEP] text [MASK]", "¿Qué? ¡Sí! «guillemets» 1/2 ½ ² ①", "Ελληνικά Русский текст عربى हिन्दी",
    "nbsp\u00a0here\u3000ideographic\u2028line", "e\u0301 combining", "\u0085next line \u200dzwj \ufeffbom",
]


@pytest.fixture(scope="module")
def model():
    return minilm.load()


@pytest.fixture(scope="module")
def reference_tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(FOLDER / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


# ---- tokenizer --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", TOKENIZER_STRINGS)
def test_wordpiece_matches_the_reference_tokenizer(model, reference_tokenizer, text):
    tokens, ids = model.tokenizer.encode(text)
    ref = reference_tokenizer.encode(text)
    assert tokens == ref.tokens
    assert ids.tolist() == ref.ids


# Characters up to the CJK block that Unicode 3.2 already had: newer ones are treated according to each
# library's own Unicode tables (unassigned = removed), which says nothing about the tokenizer's rules.
_CHARS = st.characters(max_codepoint=0x9FFF, exclude_categories=("Cs", "Co")).filter(
    lambda c: unicodedata.ucd_3_2_0.category(c) != "Cn")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=_CHARS, max_size=40))
def test_wordpiece_matches_the_reference_on_random_text(model, reference_tokenizer, text):
    assert model.tokenizer.encode(text)[1].tolist() == reference_tokenizer.encode(text).ids


def test_wordpiece_checks_its_vocabulary_and_input():
    with pytest.raises(ValueError, match="unk token"):
        WordPiece(["[CLS]", "[SEP]"])
    with pytest.raises(TypeError):
        WordPiece("[UNK][CLS][SEP]")
    with pytest.raises(TypeError, match="text must be a str"):
        WordPiece(["[UNK]", "[CLS]", "[SEP]"]).tokenize(3)


# ---- forward pass vs the oracles ---------------------------------------------------------------

@pytest.fixture(scope="module")
def run(model):
    return model.run(SENTENCES)


def test_sentence_embeddings_match_sentence_transformers(run):
    from sentence_transformers import SentenceTransformer

    st_model = SentenceTransformer(str(FOLDER), device="cpu", local_files_only=True)
    expected = st_model.encode(SENTENCES, convert_to_numpy=True, batch_size=len(SENTENCES))
    assert run.embeddings.shape == expected.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(run.embeddings, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(run.embeddings, axis=1), 1, atol=1e-6)


def test_every_layers_attention_matches_transformers(run):
    import torch
    from transformers import AutoModel

    hf = AutoModel.from_pretrained(str(FOLDER), attn_implementation="eager", local_files_only=True).eval()
    with torch.no_grad():
        out = hf(input_ids=torch.tensor(run.batch.ids),
                 attention_mask=torch.tensor(run.batch.mask.astype(np.int64)),
                 output_attentions=True, output_hidden_states=True)
    assert len(out.attentions) == len(run.attentions) == 6
    mask = run.batch.mask
    for layer, (expected, got) in enumerate(zip(out.attentions, run.attentions)):
        expected = expected.numpy()
        assert got.shape == expected.shape
        for b in range(len(SENTENCES)):  # compare the real tokens' rows; padding rows are never used
            n = int(mask[b].sum())
            np.testing.assert_allclose(got[b, :, :n], expected[b, :, :n], atol=1e-5, rtol=0,
                                       err_msg=f"layer {layer}, sentence {b}")
    for b in range(len(SENTENCES)):
        n = int(mask[b].sum())
        np.testing.assert_allclose(run.hidden[-1][b, :n], out.last_hidden_state[b, :n].numpy(), atol=1e-4, rtol=0)


def test_single_sentence_equals_its_row_in_a_padded_batch(model, run):
    alone = model.run(SENTENCES[1])
    n = len(alone.batch.tokens[0])
    np.testing.assert_allclose(alone.embeddings[0], run.embeddings[1], atol=1e-6)
    np.testing.assert_allclose(alone.attention(0), run.attention(1), atol=1e-6)
    assert run.attention(1).shape == (6, 12, n, n)


def test_attention_rows_sum_to_one_and_ignore_padding(run):
    for A in run.attentions:
        np.testing.assert_allclose(A.sum(-1), 1, atol=1e-5)
        assert np.all(A[~np.broadcast_to(run.batch.mask[:, None, None, :], A.shape)] == 0)


# ---- ablation -----------------------------------------------------------------------------------

def test_ablation_sweep_equals_removing_each_head_alone(model, run):
    sweep = model.ablation_sweep(run)
    assert sweep.shape == (6, 12, len(SENTENCES), 384)
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        alone = model.embed(SENTENCES, remove=[(layer, head)])
        np.testing.assert_allclose(sweep[layer, head], alone, atol=1e-5)
        assert not np.allclose(alone, run.embeddings, atol=1e-4)  # removing a head changes something


def test_mean_ablation_sweep_replaces_a_head_by_its_mean_over_each_sentence(model, run):
    from mha.heads import ablate_heads

    sweep = model.ablation_sweep(run, method="mean")
    for layer, head in [(0, 3), (4, 10)]:
        for b, sentence in enumerate(SENTENCES[:2]):  # one sentence at a time: no padding to think about
            alone = model.run([sentence])
            lay = model.layers[layer]
            concat = model.steps(alone, layer, 0).concat  # (T, h*d_v)
            Z = ablate_heads(concat, [head], model.h, "mean") @ lay.W_O + lay.b_O
            X = minilm.layer_norm(alone.hidden[layer][0] + Z, lay.gamma_1, lay.beta_1, model.eps)[None]
            Y = model._feed_forward(X, lay)
            mask = alone.batch.mask
            for j in range(layer + 1, model.L):
                Y, _ = model.layer(Y, mask, j)
            np.testing.assert_allclose(sweep[layer, head, b], minilm.mean_pool(Y, mask)[0], atol=1e-5)
    assert not np.allclose(sweep, model.ablation_sweep(run), atol=1e-4)  # the mean is not zero
    with pytest.raises(ValueError, match="method"):
        model.ablation_sweep(run, method="half")


def test_sweeps_on_two_threads_give_the_same_numbers(model, run):
    two = minilm.load(threads=2)
    assert (model.threads, two.threads) == (1, 2)
    np.testing.assert_array_equal(two.ablation_sweep(run), model.ablation_sweep(run))
    np.testing.assert_array_equal(two.one_head_sweep(SENTENCES), model.one_head_sweep(run))
    for threads in (0, 2.0, "2", True):
        with pytest.raises((TypeError, ValueError), match="threads"):
            minilm.load(threads=threads)


def test_removing_a_head_changes_only_later_layers(model, run):
    removed = model.run(SENTENCES, remove=[(3, 4)])
    for i in range(4):
        np.testing.assert_array_equal(removed.hidden[i], run.hidden[i])
    np.testing.assert_array_equal(removed.attentions[3], run.attentions[3])  # the head still attends...
    assert not np.allclose(removed.hidden[4], run.hidden[4])  # ...but its output is gone


def test_remove_is_validated(model):
    with pytest.raises(ValueError, match="head 12"):
        model.run("hi", remove=[(0, 12)])
    with pytest.raises(ValueError, match="layer 6"):
        model.run("hi", remove=[(6, 0)])
    with pytest.raises(TypeError):
        model.run(3)


def test_steps_expose_values_for_the_norm_analysis(model, run):
    s = model.steps(run, 2, b=0)
    n = int(run.batch.mask[0].sum())
    np.testing.assert_allclose(s.weights, run.attentions[2][0, :, :n, :n], atol=1e-6)
    assert s.V_heads.shape == (12, n, 32)


# ---- the pieces -----------------------------------------------------------------------------

def test_erf_and_gelu_against_math_erf():
    xs = np.linspace(-6, 6, 2001)
    exact = np.array([math.erf(v) for v in xs])
    assert np.abs(minilm.erf(xs) - exact).max() < 2e-7
    x32 = xs.astype(np.float32)
    got = minilm.gelu(x32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 0.5 * xs * (1 + np.array([math.erf(v / math.sqrt(2)) for v in xs])), atol=2e-6)
    assert np.all(np.isfinite(minilm.erf(np.array([-1e30, 1e30]))))


def test_layer_norm_against_a_direct_formula():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 8))
    g, b = rng.normal(size=8), rng.normal(size=8)
    expected = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-12) * g + b
    np.testing.assert_allclose(minilm.layer_norm(X, g, b), expected, atol=1e-12)


# ---- bad input, by kind ---------------------------------------------------------------------------

def test_a_lone_surrogate_is_named_with_its_position(model):
    with pytest.raises(ValueError, match=r"texts\[1\] holds a lone surrogate U\+D800 at position 2"):
        model.run(["fine", "ok\ud800"])
    with pytest.raises(ValueError, match="text holds a lone surrogate U\\+DC00 at position 0"):
        model.tokenizer.tokenize("\udc00")
    with pytest.raises(ValueError, match="position 1"):
        model.tokenizer.normalize("a\ud800")


def test_text_past_the_512_positions_is_refused(model):
    assert model.max_positions == 512
    fits = " ".join(["word"] * 510)  # 510 tokens + [CLS] + [SEP]
    assert model.batch(fits).ids.shape == (1, 512)
    with pytest.raises(ValueError, match=r"texts\[1\] has 513 tokens.*512 positions"):
        model.batch(["short", fits + " word"])
    with pytest.raises(ValueError, match="513 positions"):
        model.embed_tokens(np.ones((1, 513), dtype=np.int64))


def test_ids_masks_and_indices_are_checked(model, run):
    with pytest.raises(ValueError, match="holds 30522"):
        model.embed_tokens(np.array([[101, 30522]]))
    with pytest.raises(TypeError, match="array of integers"):
        model.embed_tokens(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="exactly 2 axes"):
        model.embed_tokens(np.array([101, 102]))
    bad = minilm.Batch(run.batch.tokens, run.batch.ids, run.batch.mask.astype(int))
    with pytest.raises(TypeError, match="mask must be a boolean array"):
        model.run(bad)
    bad = minilm.Batch(run.batch.tokens, run.batch.ids, run.batch.mask[:, :-1])
    with pytest.raises(ValueError, match="mask must have the shape of ids"):
        model.embed(bad)
    with pytest.raises(ValueError, match="b=4 is out of range"):
        run.attention(4)
    with pytest.raises(ValueError, match="i=6 is out of range"):
        model.steps(run, 6)
    with pytest.raises(ValueError, match="b=-1 is out of range"):
        model.steps(run, 0, b=-1)
    with pytest.raises(TypeError, match="run must be an EncoderRun"):
        model.steps(run.batch, 0)
    X = run.hidden[0]
    with pytest.raises(ValueError, match="mask must have shape"):
        model.layer(X, run.batch.mask[:1], 0)
    with pytest.raises(ValueError, match="i=6"):
        model.layer(X, run.batch.mask, 6)


def test_texts_and_remove_are_checked(model):
    for texts in (np.array(["a", "b"]), [], ["a", 3], None):
        with pytest.raises(TypeError):
            model.batch(texts)
    with pytest.raises(TypeError, match="remove must be an iterable"):
        model.run("hi", remove=(0, 1)[0])


def test_wordpiece_pieces_are_checked():
    tok = WordPiece(["[UNK]", "[CLS]", "[SEP]", "ab"])
    with pytest.raises(TypeError, match="max_word_chars must be a positive integer"):
        WordPiece(["[UNK]", "[CLS]", "[SEP]"], max_word_chars=2.5)
    with pytest.raises(ValueError, match="position 1"):
        tok.word_pieces("a\ud800")
    with pytest.raises(TypeError, match="text must be a str"):
        tok.pre_tokenize(b"ab")
    assert tok.word_pieces("ab") == ["ab"]


def test_one_head_sweep_equals_keeping_one_head_by_removing_the_others():
    from mha.models.texts import PARAPHRASES
    model = minilm.load()
    texts = [s for item in PARAPHRASES[:2] for s in item]
    sweep = model.one_head_sweep(texts)  # (L, h, B, d)
    assert sweep.shape == (model.L, model.h, len(texts), model.d)
    for layer, head in [(0, 3), (5, 11), (2, 0)]:
        alone = model.embed(texts, remove=[(layer, j) for j in range(model.h) if j != head])
        assert np.allclose(sweep[layer, head], alone, atol=1e-5)
