"""How fast chapter 05's lookup trains: one NumPy training step against the same model in PyTorch.

Prints the milliseconds of one step (loss, gradients, Adam) for each head count,
NumPy (mha.training, one model and three seeds side by side) against PyTorch
(the same model and recipe with autograd, float32), their ratio, and the seconds
the chapter's section spends training (3 seeds x 5 head counts + fixed-d_k runs).

    .venv/bin/python benchmarks/bench_training.py [--threads 1] [--repeat 200] [--section]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mha import training as tr


def numpy_step(h, seeds, repeat):
    shapes = tr.param_shapes(h, 16, 16 // h, 2)
    theta = np.stack([tr.init_params(np.random.default_rng(s), shapes) for s in seeds])
    batches = list(tr._batches([np.random.default_rng(s) for s in seeds], repeat, 2))
    state = {}
    with tr.threadpool_limits(1, user_api="blas"):
        start = time.perf_counter()
        for b in batches:
            _, grad = tr.loss_and_grads(theta, shapes, b, h)
            tr.adam_step(theta, grad, state, 1e-3)
    return (time.perf_counter() - start) / repeat * 1e3


def torch_step(h, repeat, d=16):
    d_k = d // h
    g = torch.Generator().manual_seed(0)
    P = {"E": torch.randn(64, d, generator=g), "W_Q": torch.randn(d, d, generator=g) / 4,
         "W_K": torch.randn(d, d, generator=g) / 4, "W_V": torch.randn(d, d, generator=g) / 4,
         "W_O": torch.randn(d, d, generator=g) / 4, "R": torch.randn(2, d, 16, generator=g) / 4,
         "c": torch.zeros(2, 16)}
    for p in P.values():
        p.requires_grad_(True)
    opt = torch.optim.Adam(P.values(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    rng = np.random.default_rng(0)
    batches = [tr.lookup_batch(rng, tr.BATCH, 2) for _ in range(repeat)]
    batches = [tuple(torch.as_tensor(a) for a in (b.keys, b.values, b.asked_keys, b.answers)) for b in batches]
    start = time.perf_counter()
    for keys, values, asked_keys, answers in batches:
        B = keys.shape[0]
        X = torch.cat([P["E"][keys] + P["E"][16 + values],
                       (P["E"][32 + 16 * torch.arange(2) + asked_keys]).sum(1, keepdim=True)], dim=1)  # (B, 9, d)
        q = (X[:, -1:] @ P["W_Q"]).reshape(B, 1, h, d_k).transpose(1, 2)
        k = (X @ P["W_K"]).reshape(B, 9, h, d_k).transpose(1, 2)
        v = (X @ P["W_V"]).reshape(B, 9, h, d_k).transpose(1, 2)
        A = torch.softmax(q @ k.transpose(-1, -2) / d_k ** 0.5, dim=-1)
        z = X[:, -1] + (A @ v).transpose(1, 2).reshape(B, d) @ P["W_O"]
        logits = z @ P["R"] + P["c"][:, None]  # (2, B, 16)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 16), answers.T.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return (time.perf_counter() - start) / repeat * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--section", action="store_true", help="also time the chapter's training runs")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{'h':>3} {'numpy ms':>9} {'numpy x3 ms':>12} {'torch ms':>9} {'numpy/torch':>12}")
    for h in (1, 2, 4, 8, 16):
        one, three = numpy_step(h, (0,), args.repeat), numpy_step(h, (0, 1, 2), args.repeat)
        ref = torch_step(h, args.repeat)
        print(f"{h:>3} {one:>9.2f} {three:>12.2f} {ref:>9.2f} {one / ref:>12.2f}")
    if args.section:
        start = time.perf_counter()
        for h in (1, 2, 4, 8, 16):
            tr.dictionary_lookups(h, seeds=(0, 1, 2))
        for h in (8, 16):
            tr.dictionary_lookups(h, d_k=4, seeds=(0, 1, 2))
        for h in (1, 2):
            tr.dictionary_lookups(h, d_k=4, seeds=(0,))
        print(f"chapter 05's training runs: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
