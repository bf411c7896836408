"""SmolLM2's ablations by zeroing and by the mean, the second rounding error, and the pinned texts.

ablation_nll (shared prefixes, variants side by side) must equal removing each head alone with
run(remove=..., method=...); the rounding noise stays within half a Q4_1 step; the texts are the
pinned files, checked by SHA-256.
"""

import numpy as np
import pytest

from mha import heads
from mha.models import WeightsError, smollm2, texts
from mha.models._threads import pieces


@pytest.fixture(scope="module")
def model():
    return smollm2.load()


def test_ablation_nll_equals_removing_each_head_alone(model):
    ids = model.encode("The lamp was lit at night.")
    pairs = [(29, 4), (27, 0), (29, 1)]
    nll = model.ablation_nll(ids, pairs)  # (2, 3, T-1)
    assert nll.shape == (2, 3, len(ids) - 1)
    for m, method in enumerate(heads.ABLATIONS):
        for k, pair in enumerate(pairs):
            alone = model.nll(ids, remove=[pair], method=method)[0]
            assert np.allclose(nll[m, k], alone, atol=2e-4), (method, pair)
    sweep = model.ablation_sweep(ids, [29], method="mean")
    assert np.allclose(sweep[0, 4], np.exp(nll[1, 0].mean()), rtol=1e-4)


def test_mean_and_zero_differ_and_a_repeated_pair_is_fine(model):
    ids = model.encode("One two three four.")
    nll = model.ablation_nll(ids, [(29, 2), (29, 2)])
    assert np.array_equal(nll[:, 0], nll[:, 1]) and not np.allclose(nll[0], nll[1])
    # the pair given twice is run once: the same numbers as given once (BLAS may round a row of a batch
    # by its place in the batch, as OpenBLAS on an AMD EPYC does, so two copies of it could differ)
    assert np.array_equal(nll[:, :1], model.ablation_nll(ids, [(29, 2)]))
    mixed = model.ablation_nll(ids, [(29, 2), (0, 1), [29, 2]])
    assert np.array_equal(mixed[:, 0], mixed[:, 2]) and mixed.shape == (2, 3, len(ids) - 1)


@pytest.mark.parametrize("call, error, match", [
    (lambda m: m.ablation_nll(np.array([1, 2, 3]), [(0, 9)]), ValueError, "out of range"),
    (lambda m: m.ablation_nll(np.array([1, 2, 3]), [(30, 0)]), ValueError, "out of range"),
    (lambda m: m.ablation_nll(np.array([1, 2, 3]), [(0, 1)], methods="zero"), TypeError, "methods"),
    (lambda m: m.ablation_nll(np.array([1, 2, 3]), [(0, 1)], methods=["half"]), ValueError, "method"),
    (lambda m: m.ablation_nll(np.array([[1, 2], [3, 4]]), [(0, 1)]), ValueError, "one text"),
    (lambda m: m.ablation_nll(np.array([1]), [(0, 1)]), ValueError, "at least"),
    (lambda m: m.run(np.array([1, 2]), remove=[(0, 1)], method="max"), ValueError, "method"),
    (lambda m: m.ablation_sweep(np.array([1, 2]), [0], method=0), ValueError, "method"),
])
def test_bad_input_is_refused_clearly(model, call, error, match):
    with pytest.raises(error, match=match):
        call(model)


def test_rounding_noise_stays_within_half_a_step():
    rng = np.random.default_rng(0)
    W = rng.integers(0, 16, size=(3, 64)).astype(np.float32) * 0.1 - 0.7  # 4-bit values, step 0.1
    W[:, ::32] = -0.7  # each block uses the lowest and the highest level, as Q4_1's rounding does
    W[:, 1::32] = 0.8
    noise = smollm2.rounding_noise(W, np.random.default_rng(1))
    assert noise.shape == W.shape and noise.dtype == np.float32
    assert np.abs(noise).max() <= 0.05 + 1e-7 and np.abs(noise).max() > 0.04
    with pytest.raises(ValueError, match="blocks of 32"):
        smollm2.rounding_noise(np.ones((2, 40)), rng)
    with pytest.raises(TypeError, match="Generator"):
        smollm2.rounding_noise(np.ones((2, 32)), 3)


def test_noisy_model_is_fixed_by_its_seed(model):
    a, b = smollm2.load(noise_seed=1), smollm2.load(noise_seed=1)
    wa, wb, w0 = a.weights(3), b.weights(3), model.weights(3)
    assert isinstance(a, smollm2.NoisySmolLM2)
    assert np.array_equal(wa.W_up, wb.W_up) and not np.array_equal(wa.W_up, w0.W_up)
    assert np.array_equal(wa.attn_norm, w0.attn_norm)  # the norms' weights are left as they are
    assert not np.array_equal(smollm2.load(noise_seed=2).weights(3).W_Q, wa.W_Q)
    with pytest.raises(ValueError, match="seed"):
        smollm2.load(noise_seed=-1)


def test_pinned_texts_are_the_expected_files():
    play, licence = texts.tempest(), texts.apache_licence()
    assert play.startswith("ACT 1\nSCENE 1\n") and "PROSPERO" in play
    assert licence.lstrip().startswith("Apache License") and "Version 2.0" in licence


def test_a_changed_text_file_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "shksprdata"
    (fake / "texts").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "texts" / "tempest_gut.txt").write_text("ACT 1\nSCENE 1\nnot the play\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(WeightsError, match="SHA-256"):
        texts.tempest()


# ---- threads: the same pieces of work, so the same numbers ----------------------------------------
def test_two_threads_give_the_same_numbers_as_one(model):
    two = smollm2.load(threads=2)
    assert (model.threads, two.threads) == (1, 2)
    ids = np.stack([model.encode("The lamp was lit at night and the door shut.")[:8],
                    model.encode("Rain fell on the roof of the old mill, all day.")[:8]] * 40)  # (80, 8)
    one_run, two_run = model.run(ids, keep_attention=True), two.run(ids, keep_attention=True)
    assert len(pieces(*ids.shape)) > 1  # the batch really is cut into pieces
    assert np.array_equal(one_run.final, two_run.final)
    assert all(np.array_equal(a, b) for a, b in zip(one_run.attentions, two_run.attentions))
    assert np.array_equal(model.nll(ids), two.nll(ids))
    text = ids[0]
    pairs = [(0, 1), (0, 5), (2, 3)] * 10  # 60 variants at 8 positions: several pieces at layers 0 and 2
    assert np.array_equal(model.ablation_nll(text, pairs), two.ablation_nll(text, pairs))


def test_a_text_in_a_batch_of_pieces_gets_its_numbers_alone(model):
    """Pieces hold whole texts, so a text's numbers in a batch are its own (to float32 rounding)."""
    a, b = model.encode("Cats sleep."), model.encode("Dogs bark.")
    ids = np.stack([a, b] * 100)  # (200, 3): two pieces of 85 texts and one of 30
    assert len(pieces(*ids.shape)) > 1
    np.testing.assert_allclose(model.nll(ids)[[1, 199]], np.stack([model.nll(b)[0]] * 2), atol=1e-4)


def test_noisy_layers_made_on_two_threads_are_the_same(model):
    one, two = smollm2.load(noise_seed=3), smollm2.load(noise_seed=3, threads=2)
    for i in (0, 17, 29):
        assert np.array_equal(one.weights(i).W_down, two.weights(i).W_down)


@pytest.mark.parametrize("threads", [0, -1, 1.5, "2", True, None])
def test_threads_is_checked(threads):
    with pytest.raises((TypeError, ValueError), match="threads"):
        smollm2.load(threads=threads)
