"""mha.training: the task, the whole model's gradient, the schedule, Adam, determinism and bad input."""

import math

import numpy as np
import pytest

import mha
from mha import training as tr
from mha.training import model, run, sweep


def test_lookup_batches_are_well_formed():
    b = tr.lookup_batch(np.random.default_rng(0), 500, n_keys=3)
    assert b.keys.shape == b.values.shape == (500, 8) and b.asked.shape == (500, 3)
    assert all(len(set(row)) == 8 for row in b.keys)  # distinct keys in each lookup
    assert all(len(set(row)) == 3 for row in b.asked)  # distinct entries asked
    assert b.keys.min() >= 0 and b.keys.max() <= 15 and b.values.max() <= 15
    np.testing.assert_array_equal(b.answers[:, 0], b.values[np.arange(500), b.asked[:, 0]])
    assert len(np.unique(b.keys)) == 16 and len(np.unique(b.values)) == 16


def test_the_test_set_is_fixed():
    a, b = tr.test_set(2), tr.test_set(2)
    assert a.keys.shape == (8192, 8)
    np.testing.assert_array_equal(a.keys, b.keys)
    assert not a.keys.flags.writeable


@pytest.mark.parametrize("steps", [1500, 300])
def test_schedule_matches_its_definition(steps):
    lrs = np.array([tr.learning_rate(s, steps=steps) for s in range(steps)])
    np.testing.assert_allclose(lrs[:100], 3e-3 * np.arange(1, 101) / 100)
    s = np.arange(100, steps)
    np.testing.assert_allclose(lrs[100:], 0.5 * 3e-3 * (1 + np.cos(np.pi * (s + 1 - 100) / (steps - 100))),
                               atol=1e-18)
    assert lrs.argmax() == 99 and lrs[-1] == pytest.approx(0.0, abs=1e-18)
    assert np.all(np.diff(lrs[99:]) <= 0)  # decays monotonically after the warm-up


def test_adam_matches_the_formula():
    theta = np.array([[1.0, -2.0, 0.5]])
    grads = [np.array([[0.1, -0.3, 0.0]]), np.array([[0.2, 0.1, -0.4]])]
    state, m, v, want = {}, np.zeros(3), np.zeros(3), theta[0].copy()
    for t, g in enumerate(grads, start=1):
        tr.adam_step(theta, g, state, lr=0.01)
        m = 0.9 * m + 0.1 * g[0]
        v = 0.999 * v + 0.001 * g[0] ** 2
        want -= 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(theta[0], want, rtol=1e-12)
    assert state["t"] == 2


def tiny_model(h=2, d=4, d_k=None, n_keys=2, M=2, B=3, seed=0):
    shapes = tr.param_shapes(h, d, d // h if d_k is None else d_k, n_keys)
    theta = np.stack([tr.init_params(np.random.default_rng(seed + m), shapes, dtype=np.float64) for m in range(M)])
    theta[:, -n_keys * 16:] = np.random.default_rng(seed).normal(size=(M, n_keys * 16))  # biases away from 0
    batch = next(run._batches([seed + 10 + m for m in range(M)], 1, n_keys))
    batch = tr.LookupBatch(batch.keys[:, :B], batch.values[:, :B], batch.asked[:, :B])
    return theta, shapes, batch


@pytest.mark.parametrize("h, d_k, n_keys", [(2, None, 2), (1, None, 1), (4, 2, 3)])
def test_whole_model_gradient_matches_finite_differences(h, d_k, n_keys):
    theta, shapes, batch = tiny_model(h=h, d_k=d_k, n_keys=n_keys)
    loss, grad = tr.loss_and_grads(theta, shapes, batch, h)
    assert loss.shape == (2,) and grad.shape == theta.shape
    eps = 1e-6
    numeric = np.zeros_like(theta)
    for i in range(theta.shape[1]):
        plus, minus = theta.copy(), theta.copy()
        plus[:, i] += eps
        minus[:, i] -= eps
        numeric[:, i] = (tr.loss_and_grads(plus, shapes, batch, h)[0] - tr.loss_and_grads(minus, shapes, batch, h)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
    assert np.abs(grad).max() > 1e-3  # something to compare


def test_models_side_by_side_do_not_mix():
    theta, shapes, batch = tiny_model(M=2)
    loss, grad = tr.loss_and_grads(theta, shapes, batch, 2)
    one = tr.LookupBatch(batch.keys[1:], batch.values[1:], batch.asked[1:])
    loss1, grad1 = tr.loss_and_grads(theta[1:].copy(), shapes, one, 2)
    np.testing.assert_allclose(loss[1:], loss1, rtol=1e-12)
    np.testing.assert_allclose(grad[1:], grad1, rtol=1e-10, atol=1e-14)


def tokens_of(w, batch, m=0):
    """The 9 tokens of every lookup of model ``m``, built straight from the definition: ``(B, 9, d)``."""
    E = w["E"][m]
    entries = E[batch.keys[m]] + E[16 + batch.values[m]]  # (B, 8, d)
    query = sum(E[32 + 16 * j + batch.asked_keys[m][:, j]] for j in range(batch.asked.shape[-1]))  # (B, d)
    return np.concatenate([entries, query[:, None]], axis=1)


@pytest.mark.parametrize("h, d, d_k, n_keys", [(2, 4, None, 2), (1, 4, None, 1), (4, 8, 3, 3)])
def test_query_row_is_the_library_layer(h, d, d_k, n_keys):
    """The model's lean layer gives the last row of mha.multi_head_attention on the 9 tokens."""
    theta, shapes, batch = tiny_model(h=h, d=d, d_k=d_k, n_keys=n_keys, M=2)
    w = tr.unpack(theta, shapes)
    f = model._forward(w, batch, h)
    for m in range(2):
        X = tokens_of(w, batch, m)  # (B, 9, d)
        Y, A = mha.multi_head_attention(X, w["W_Q"][m], w["W_K"][m], w["W_V"][m], w["W_O"][m], h=h)
        np.testing.assert_allclose(f["x_q"][m].T, X[:, -1], rtol=1e-12)
        np.testing.assert_allclose(f["z"][m].T, X[:, -1] + Y[:, -1], rtol=1e-12)  # (d, B) against (B, d)
        np.testing.assert_allclose(np.moveaxis(f["cache"]["A"][0][m], -1, 0), A[:, :, -1], rtol=1e-12)  # (B, h, 9)


@pytest.mark.parametrize("h, d, d_k, n_keys", [(2, 4, None, 2), (1, 4, None, 1), (4, 8, 3, 3)])
def test_model_gradient_is_the_library_backward(h, d, d_k, n_keys):
    """Every weight's gradient equals mha.attention_backward's, with the readouts and embeddings chained by hand."""
    theta, shapes, batch = tiny_model(h=h, d=d, d_k=d_k, n_keys=n_keys, M=2)
    _, grad = tr.loss_and_grads(theta, shapes, batch, h)
    w, g = tr.unpack(theta, shapes), tr.unpack(grad, shapes)
    for m in range(2):
        X = tokens_of(w, batch, m)
        B = X.shape[0]
        W = [w[k][m] for k in ("W_Q", "W_K", "W_V", "W_O")]
        Y, _ = mha.multi_head_attention(X, *W, h=h)
        z = X[:, -1] + Y[:, -1]  # (B, d)
        logits = np.einsum("bd,jdo->jbo", z, w["R"][m]) + w["c"][m][:, None]  # (n_keys, B, 16)
        p = np.exp(logits - logits.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        p[np.arange(n_keys)[:, None], np.arange(B), batch.answers[m].T] -= 1
        dlogits = p / (B * n_keys)
        dz = np.einsum("jbo,jdo->bd", dlogits, w["R"][m])  # (B, d)
        dY = np.zeros_like(Y)
        dY[:, -1] = dz  # only the query's row of the layer reaches the loss
        lib = mha.attention_backward(X, *W, h, dY)
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            np.testing.assert_allclose(g[name][m], getattr(lib, name), rtol=1e-10, atol=1e-13)
        dX = lib.X.copy()
        dX[:, -1] += dz  # the residual
        dE = np.zeros_like(w["E"][m])
        np.add.at(dE, batch.keys[m], dX[:, :-1])
        np.add.at(dE, 16 + batch.values[m], dX[:, :-1])
        for j in range(n_keys):
            np.add.at(dE, 32 + 16 * j + batch.asked_keys[m][:, j], dX[:, -1])
        np.testing.assert_allclose(g["E"][m], dE, rtol=1e-10, atol=1e-13)


def test_unpack_gives_views():
    theta, shapes, _ = tiny_model()
    views = tr.unpack(theta, shapes)
    assert sum(math.prod(s) for s in shapes.values()) == theta.shape[1]
    views["W_O"][...] = 7.0
    assert (theta == 7.0).sum() == 2 * math.prod(shapes["W_O"])


def test_deterministic_per_seed_and_seeds_differ():
    a = tr.dictionary_lookup(2, seed=3, steps=30)
    b = tr.dictionary_lookup(2, seed=3, steps=30)
    c = tr.dictionary_lookup(2, seed=4, steps=30)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    assert a.accuracy == b.accuracy and a.accuracy_per_key == b.accuracy_per_key
    assert not np.array_equal(a.train_loss, c.train_loss)
    together = tr.dictionary_lookups(2, seeds=(3, 4), steps=30)
    np.testing.assert_allclose(together[0].train_loss, a.train_loss, rtol=1e-5)
    np.testing.assert_allclose(together[1].train_loss, c.train_loss, rtol=1e-5)


def test_result_fields_and_shapes():
    r = tr.dictionary_lookup(4, d_k=3, n_keys=3, steps=20)
    assert (r.h, r.d_k, r.d_v, r.n_keys) == (4, 3, 4, 3)
    assert len(r.accuracy_per_key) == 3 and 0 <= r.accuracy <= 1
    assert r.accuracy == pytest.approx(np.mean(r.accuracy_per_key))
    assert r.attention_on_asked.shape == (4, 3) and r.sample_weights.shape == (4, 4, 9)
    np.testing.assert_allclose(r.sample_weights.sum(axis=-1), 1, rtol=1e-5)
    assert r.sample_attention.shape == (4, 4, 3) and r.sample_answers.shape == (4, 3)
    assert r.params["W_Q"].shape == (16, 12) and r.train_loss.shape == (20,)
    assert np.isfinite(r.loss)


def test_training_learns():
    r = tr.dictionary_lookup(2, steps=300)
    assert r.train_loss[-20:].mean() < 0.7 * r.train_loss[:20].mean()
    assert r.accuracy > 0.2  # far above chance (1/16) after a short run


@pytest.mark.parametrize("kw, match", [
    ({"h": 3}, "must divide"), ({"h": 0}, "h"), ({"h": 2.5}, "h"), ({"n_keys": 9}, "n_keys"),
    ({"d_k": 0}, "d_k"), ({"seed": -1}, "seed"), ({"steps": 0}, "steps"), ({"lr": float("nan")}, "lr"),
    ({"lr": 0}, "lr"), ({"d": "16"}, "d"),
])
def test_bad_arguments_are_refused(kw, match):
    args = {"h": 2, **kw}
    h = args.pop("h")
    with pytest.raises((ValueError, TypeError), match=match):
        tr.dictionary_lookup(h, steps=args.pop("steps", 1), **args)


def test_bad_seeds_are_refused():
    with pytest.raises(TypeError, match="seeds"):
        tr.dictionary_lookups(2, seeds=3, steps=1)
    with pytest.raises(ValueError, match="seeds"):
        tr.dictionary_lookups(2, seeds=(), steps=1)


def test_sweep_in_two_processes_gives_the_same_numbers():
    settings = [{"h": 2, "seeds": (0, 1), "steps": 40}, {"h": 4, "d_k": 2, "seeds": (2,), "steps": 40},
                {"h": 1, "n_keys": 1, "seeds": (0,), "steps": 40}]
    here = tr.lookup_sweep(settings)
    there = tr.lookup_sweep(settings, processes=2)
    assert [[r.h for r in rs] for rs in there] == [[2, 2], [4], [1]]
    for a, b in zip(here, there):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.train_loss, y.train_loss)
            assert x.accuracy == y.accuracy and x.accuracy_per_key == y.accuracy_per_key
    alone = tr.dictionary_lookups(2, seeds=(0, 1), steps=40)
    np.testing.assert_array_equal(alone[1].train_loss, here[0][1].train_loss)


@pytest.mark.parametrize("settings, error, match", [
    ("h=2", TypeError, "settings"), ([{"d": 16}], ValueError, "'h'"), ([{"h": 2, "speed": 1}], ValueError, "keys"),
    ([{"h": 3}], ValueError, "must divide"), ([{"h": 2, "seeds": ()}], ValueError, "seeds"), ([2], ValueError, "settings"),
])
def test_sweep_refuses_bad_settings(settings, error, match):
    with pytest.raises(error, match=match):
        tr.lookup_sweep(settings)
    with pytest.raises((TypeError, ValueError), match="processes"):
        tr.lookup_sweep([{"h": 2, "steps": 1}], processes=0)
    with pytest.raises((TypeError, ValueError), match="job_bytes"):
        tr.lookup_sweep([{"h": 2, "steps": 1}], job_bytes=0)


def test_training_lookups_are_shared_and_read_only():
    a = run._training_lookups(5, 30, 2)
    assert run._training_lookups(5, 30, 2) is a and not a.keys.flags.writeable
    assert a.keys.shape == (30 * 256, 8) and a.asked.shape == (30 * 256, 2)
    assert not np.array_equal(run._training_lookups(6, 30, 2).keys, a.keys)  # each seed its own stream


def _same_result(x, y):
    """Two LookupResults with the same numbers, bit for bit."""
    np.testing.assert_array_equal(x.train_loss, y.train_loss)
    for name in x.params:
        np.testing.assert_array_equal(x.params[name], y.params[name])
    np.testing.assert_array_equal(x.sample_weights, y.sample_weights)
    assert (x.h, x.d_k, x.seed, x.accuracy, x.accuracy_per_key, x.loss) == (y.h, y.d_k, y.seed, y.accuracy,
                                                                             y.accuracy_per_key, y.loss)


@pytest.mark.parametrize("hs, d, d_k", [((1, 2, 4, 16), 16, None), ((2, 4), 8, "wide")])
def test_models_of_one_grid_get_the_numbers_they_get_alone(hs, d, d_k):
    """Head counts trained side by side (sharing each seed's one-hot products) match each trained alone, bit for bit."""
    width = 8  # h d_k, the same for every model of the second grid: h = 2 with d_k = 4, h = 4 with d_k = 2
    dks = [None if d_k is None else width // h for h in hs]
    shapes = tr.param_shapes(hs[0], d, dks[0] or d // hs[0], 2)
    theta, train_loss = run.train_grid(hs, shapes, (0, 3), 30, tr.PEAK_LR)
    assert theta.shape[0] == train_loss.shape[0] == 2 * len(hs)
    for g, (h, dk) in enumerate(zip(hs, dks)):
        alone, shapes_alone, loss_alone = tr.train(h, d=d, d_k=dk, seeds=(0, 3), steps=30)
        assert shapes_alone == shapes
        np.testing.assert_array_equal(theta[g::len(hs)], alone)  # rows s G + g: seed s, head count hs[g]
        np.testing.assert_array_equal(train_loss[g::len(hs)], loss_alone)


def test_sweep_trains_compatible_settings_as_one_grid():
    settings = [{"h": 1, "seeds": (0, 1), "steps": 30}, {"h": 8, "d_k": 4, "seeds": (0, 1), "steps": 30},
                {"h": 4, "seeds": (0, 1), "steps": 30}, {"h": 2, "seeds": (1,), "steps": 30},
                {"h": 16, "d_k": 1, "seeds": (0, 1), "steps": 30}]  # d_k = 1 = d/h: the same shapes as h = 1 and 4
    assert sorted({indices for indices, _ in sweep._jobs(settings, 1)}) == [(0, 2, 4), (1,), (3,)]
    swept = tr.lookup_sweep(settings)
    for s, results in zip(settings, swept):
        kw = {k: v for k, v in s.items() if k != "h"}
        for x, y in zip(results, tr.dictionary_lookups(s["h"], **kw), strict=True):
            _same_result(x, y)


def test_a_job_larger_than_its_share_is_cut():
    settings = [{"h": h, "seeds": (0,), "steps": 20} for h in (1, 2, 4, 8)]  # one grid
    assert len(sweep._jobs(settings, 1)) == 1
    jobs = sweep._jobs(settings, 2)
    assert len(jobs) == 2 and sorted(i for indices, _ in jobs for i in indices) == [0, 1, 2, 3]
    here, there = tr.lookup_sweep(settings), tr.lookup_sweep(settings, processes=2)
    for a, b in zip(here, there):
        _same_result(a[0], b[0])


def test_a_grid_too_large_for_the_cache_trains_one_seed_at_a_time():
    """Chapter 06's grid (five head counts x three seeds) is cut by seeds; each model still gets its own numbers."""
    chapter = [{"h": h, "seeds": (0, 1, 2)} for h in (1, 2, 4, 8, 16)] + [{"h": 16, "d_k": 4, "seeds": (0, 1, 2)}]
    jobs = sweep._jobs(chapter, 1)
    assert sorted(jobs) == [((0, 1, 2, 3, 4), (0,)), ((0, 1, 2, 3, 4), (1,)), ((0, 1, 2, 3, 4), (2,)),
                            ((5,), (0,)), ((5,), (1, 2))]
    assert all(sweep._job_bytes(chapter, job) <= tr.JOB_BYTES for job in jobs)
    assert sweep._job_bytes(chapter, ((0, 1, 2, 3, 4), (0, 1, 2))) == 15 * 32 * 9 * 256 * 4  # N G x c x 9 x B x 4 bytes
    settings = [{"h": h, "seeds": (2, 0, 1), "steps": 20} for h in (1, 4)]  # seeds out of order
    room = sweep._job_bytes(settings, ((0, 1), (0,)))  # room for one seed of the grid
    assert sorted(sweep._jobs(settings, 1, room)) == [((0, 1), (0,)), ((0, 1), (1,)), ((0, 1), (2,))]
    swept = tr.lookup_sweep(settings, job_bytes=room)
    for s, results in zip(settings, swept):
        assert [r.seed for r in results] == [2, 0, 1]
        for x, y in zip(results, tr.dictionary_lookups(s["h"], seeds=(2, 0, 1), steps=20), strict=True):
            _same_result(x, y)


def test_a_seed_given_twice_gets_a_result_each_time():
    swept = tr.lookup_sweep([{"h": 2, "seeds": (3, 3), "steps": 10}, {"h": 4, "seeds": (3, 3), "steps": 10}])
    assert [[r.seed for r in rs] for rs in swept] == [[3, 3], [3, 3]]
    _same_result(swept[0][0], swept[0][1])


def test_head_sweep_is_one_lookup_per_head_count():
    runs = tr.head_sweep((1, 4), n_keys=1, steps=20, seed=2)
    assert [(r.h, r.d_k, r.n_keys, r.seed) for r in runs] == [(1, 16, 1, 2), (4, 4, 1, 2)]
    for r, h in zip(runs, (1, 4)):
        _same_result(r, tr.dictionary_lookup(h, n_keys=1, steps=20, seed=2))


@pytest.mark.parametrize("hs, kw, error, match", [
    (4, {}, TypeError, "hs"), ("124", {}, TypeError, "hs"), ((), {}, ValueError, "empty"),
    ((1, 2), {"h": 2}, TypeError, "hs"), ((1, 2), {"seeds": (0, 1)}, TypeError, "seed"),
    ((1, 3), {}, ValueError, "must divide"), ((1, 2), {"seed": -1}, ValueError, "seed"),
])
def test_head_sweep_refuses_bad_input(hs, kw, error, match):
    with pytest.raises(error, match=match):
        tr.head_sweep(hs, steps=1, **kw)


def test_sweep_stops_the_resource_tracker_it_started():
    """Spawned workers start a tracker that ignores SIGTERM and slows a kernel's shutdown by seconds."""
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    settings = [{"h": 1, "seeds": (0,), "steps": 2}, {"h": 2, "d_k": 4, "seeds": (0,), "steps": 2}]
    if tracker._fd is not None:
        tracker._stop()
    tr.lookup_sweep(settings, processes=2)
    assert tracker._fd is None and tracker._pid is None  # the sweep started it, and stopped it
    tracker.ensure_running()
    pid = tracker._pid
    try:
        tr.lookup_sweep(settings, processes=2)
        assert tracker._pid == pid  # one that was running already is left alone
    finally:
        tracker._stop()


def test_a_numpy_integer_head_count_works_like_an_int():
    theta, shapes, batch = tiny_model(h=2)
    loss, grad = tr.loss_and_grads(theta, shapes, batch, 2)
    loss_np, grad_np = tr.loss_and_grads(theta, shapes, batch, np.int64(2))
    np.testing.assert_array_equal(loss, loss_np)
    np.testing.assert_array_equal(grad, grad_np)
    answers, _, weights = tr.predict(theta, shapes, batch, np.int64(2))
    assert weights.shape[2] == 2
    with pytest.raises((TypeError, ValueError), match="h"):
        tr.loss_and_grads(theta, shapes, batch, 2.5)
