"""mha.examples.cat_sat_mat and mha.head_roles: four hand-set heads whose roles hold, and what h = 1 leaves of them."""

import numpy as np
import pytest

import mha
from mha import head_roles
from mha.examples import RoleExample, WorkedExample, cat_sat_mat

ROLES = ("neighbour", "same part of speech", "same word", "delimiter sink")


@pytest.fixture(scope="module")
def ex():
    return cat_sat_mat()


@pytest.fixture(scope="module")
def maps(ex):
    return {h: mha.attention_steps(ex.X, *ex.weights, h=h).weights for h in (1, 2, 4)}


def test_fields_and_features(ex):
    assert isinstance(ex, RoleExample) and isinstance(ex, WorkedExample)
    assert ex.tokens == ("the", "cat", "sat", "on", "the", "warm", "mat", ".") and ex.h == 4
    assert ex.roles == ROLES and len(ex.tags) == 8 and len(ex.features) == ex.X.shape[1] == 32
    assert all(W.shape == (32, 32) and not W.flags.writeable for W in ex.weights)
    # Each row has exactly one position, one part of speech, one word, and the bias.
    for block in range(3):
        np.testing.assert_array_equal(ex.X[:, 8 * block:8 * block + 8].sum(axis=1), 1)
    assert ex.X[:, ex.features.index("bias")].tolist() == [1] * 8
    assert ex.X[:, ex.features.index("delimiter")].tolist() == [0] * 7 + [1]


def test_only_the_split_changes_with_h(ex):
    runs = [mha.attention_steps(ex.X, *ex.weights, h=h) for h in (1, 2, 4)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.Q, runs[0].Q)
        np.testing.assert_array_equal(r.K, runs[0].K)
    # At h = 1 the single head's scores are the four role heads' scores added up.
    np.testing.assert_allclose(runs[0].scores[0], runs[2].scores.sum(axis=0))


def test_neighbour_head_looks_beside_each_token(maps):
    A = maps[4][0]
    beside = head_roles.role_keys(cat_sat_mat())[0]
    per_row = (A * beside).sum(axis=1)
    assert per_row.min() > 0.7 and per_row[1:-1].min() > 0.8
    assert np.all(np.abs(A.argmax(axis=1) - np.arange(8)) == 1)


def test_part_of_speech_head_pairs_determiners_and_nouns(maps):
    A = maps[4][1]
    the1, cat, the2, mat = 0, 1, 4, 6
    for a, b in ((the1, the2), (cat, mat)):
        assert A[a, b] > 0.4 and A[b, a] > 0.4 and A[a, a] + A[a, b] > 0.85
    for t in (2, 3, 5, 7):  # words without a partner of their kind keep to themselves
        assert A[t, t] > 0.7


def test_word_head_locks_the_two_the_and_not_cat_and_mat(maps):
    A = maps[4][2]
    assert A[0, 4] > 0.4 and A[4, 0] > 0.4
    assert A[1, 6] < 0.05 and A[6, 1] < 0.05 and A[1, 1] > 0.7


def test_sink_head_sends_every_row_to_the_full_stop(maps):
    assert maps[4][3][:, 7].min() > 0.98


def test_each_role_is_held_by_its_own_head(ex):
    masses = head_roles.read_roles(ex, 4).masses   # (head, role)
    assert np.all(np.diag(masses) > 0.8)
    # On the neighbour and sink roles (which share no keys with the others) each head beats every other head.
    for r in (0, 3):
        assert masses[r, r] > 0.6 + np.delete(masses[:, r], r).max()


def test_the_single_map_is_unlike_every_role(ex, maps):
    single = maps[1][0]
    for role_map in maps[4]:
        assert head_roles.map_distance(single, role_map) > 0.35
    kept = head_roles.survival(ex)
    assert all(0.1 < fraction < 0.7 for _, _, fraction in kept.values())
    # The strongest signal, the sink, leads the single map; the neighbours fare worst.
    single_mass = {role: s for role, (_, s, _) in kept.items()}
    assert max(single_mass, key=single_mass.get) == "delimiter sink"
    assert min(kept, key=lambda r: kept[r][2]) == "neighbour"
    flat = head_roles.role_mass(np.full((8, 8), 1 / 8), head_roles.role_keys(ex)[0])
    assert single_mass["neighbour"] < flat  # less than a flat map gives the neighbours


def test_two_heads_blend_two_roles_each(ex):
    masses = head_roles.read_roles(ex, 2).masses
    assert masses[0, 0] > 0.4 and masses[0, 1] > 0.3 and masses[0, 3] < 0.15  # neighbour + part of speech
    assert masses[1, 3] > 0.85                                                # word + sink: the sink wins


@pytest.mark.parametrize("h", [1, 2, 4])
@pytest.mark.parametrize("row", range(8))
def test_row_arithmetic_is_the_library_s(ex, h, row):
    steps = mha.attention_steps(ex.X, *ex.weights, h=h)
    table = head_roles.row_arithmetic(steps, row)
    assert len(table) == h
    for i, step in enumerate(table):
        np.testing.assert_array_equal(step.scores, steps.scores[i, row])
        np.testing.assert_allclose(step.scaled, steps.scores[i, row] / np.sqrt(32 // h))
        np.testing.assert_allclose(step.total, np.exp(step.scaled).sum())
        np.testing.assert_allclose(step.weights, steps.weights[i, row], rtol=1e-12, atol=1e-15)


def test_hand_arithmetic_of_cat_in_the_sink_head(ex):
    step = head_roles.row_arithmetic(mha.attention_steps(ex.X, *ex.weights, h=4), 1)[3]
    e = np.exp(20 / np.sqrt(8))
    assert step.scores.tolist() == [0] * 7 + [20]
    assert step.total == pytest.approx(7 + e) and step.weights[7] == pytest.approx(e / (7 + e))


@pytest.mark.parametrize("call, error, words", [
    (lambda: head_roles.role_keys(mha.examples.i_love_llms()), TypeError, "RoleExample"),
    (lambda: head_roles.read_roles(cat_sat_mat(), 0), ValueError, "h must be"),
    (lambda: head_roles.read_roles(cat_sat_mat(), 3), ValueError, "divisible"),
    (lambda: head_roles.role_mass(np.ones((2, 3)) / 3, np.ones((3, 3), bool)), ValueError, "keys"),
    (lambda: head_roles.role_mass(np.ones((2, 3)) / 3, np.ones((2, 3))), ValueError, "boolean"),
    (lambda: head_roles.row_arithmetic("steps", 0), TypeError, "attention_steps"),
    (lambda: head_roles.row_arithmetic(mha.attention_steps(cat_sat_mat().X, *cat_sat_mat().weights, h=4), 8),
     ValueError, "row"),
    (lambda: head_roles.map_distance(np.eye(2), np.eye(3)), ValueError, "same shape"),
])
def test_bad_input_is_named(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_huge_scores_are_refused_not_overflowed():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    W = np.eye(2) * 60.0
    steps = mha.attention_steps(X, W, W, np.eye(2), np.eye(2), h=1)
    with pytest.raises(ValueError, match="overflows"):
        head_roles.row_arithmetic(steps, 0)
