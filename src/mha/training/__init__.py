r"""Train heads in NumPy on a dictionary lookup, at a fixed width, and measure the head-count trade-off.

**The task.** The input is a list of 8 entries, each a (key, value) pair, with
8 different keys out of 16 and values out of 16, in random order; then one
query token that names ``n_keys`` of those keys. The model must answer every
named key's value. Chance is 1/16 per answer.

**The model.** Width ``d``. An entry is embedded as ``E_key[k] + E_val[v]``;
the query as ``E_ask[0][k_0] + E_ask[1][k_1] + ...`` (one table per asked
slot); there are no positions, since the lookup is by content. One attention
layer of ``h`` heads of width ``d_k``, values of width ``d_v = d / h``, in
which only the query token asks: its one query row attends over the 8
entries and itself, the last row of :func:`mha.multi_head_attention` on the 9
tokens. The heads' output, through ``W_O``, is added to the query (a residual)
and read by one linear readout ``d -> 16`` (with a bias) per asked key. The
gradients follow :func:`mha.backward.attend_backward` step by step.

**Training.** Adam (0.9, 0.999, 1e-8), peak learning rate 3e-3, 100 warm-up
steps then a cosine decay to 0 (:func:`learning_rate`), batches of 256 fresh
samples, the mean cross-entropy over the answers. Embeddings start as
N(0, 1), projections as N(0, 1/fan_in), biases at 0. Everything is float32.
The score is the accuracy on one fixed test set of 8192 samples.

:func:`dictionary_lookup` runs one experiment and is deterministic per seed;
:func:`dictionary_lookups` trains several seeds side by side,
:func:`head_sweep` one model per head count, and :func:`lookup_sweep` several
settings, in worker processes if asked. Models whose weights have the same
shapes (every ``h`` with ``d_k = d / h``) and that read the same lookups train
side by side in one grid and share the products of each seed's one-hots;
each model's numbers are the ones it gets alone.

One idea per module, each importing only those above it:

* :mod:`~mha.training.task`: the lookups and the fixed test set;
* :mod:`~mha.training.model`: the weights' layout, the layer for the one
  query row (batch last), its backward pass, the loss;
* :mod:`~mha.training.optim`: Adam and the learning-rate schedule;
* :mod:`~mha.training.run`: one experiment, its training streams and its
  :class:`LookupResult`;
* :mod:`~mha.training.sweep`: many experiments, grouped into jobs, in worker
  processes if asked.

This package re-exports their public names and constants
(``mha.training.N_ENTRIES``, ``mha.training.lookup_sweep``, ...).
"""

from .model import DTYPE, init_params, loss_and_grads, param_shapes, predict, unpack
from .optim import BETAS, EPS, PEAK_LR, WARMUP, adam_step, learning_rate
from .run import N_SAMPLES, LookupResult, dictionary_lookup, dictionary_lookups, train
from .sweep import JOB_BYTES, head_sweep, lookup_sweep
from .task import BATCH, N_ENTRIES, N_SYMBOLS, TEST_SEED, TEST_SIZE, LookupBatch, lookup_batch, test_set

__all__ = ["LookupBatch", "LookupResult", "adam_step", "dictionary_lookup", "init_params", "learning_rate",
           "head_sweep", "lookup_batch", "lookup_sweep", "loss_and_grads", "dictionary_lookups", "param_shapes",
           "predict", "test_set", "train", "unpack",
           # the constants chapters and benchmarks read
           "BATCH", "BETAS", "DTYPE", "EPS", "JOB_BYTES", "N_ENTRIES", "N_SAMPLES", "N_SYMBOLS", "PEAK_LR",
           "TEST_SEED", "TEST_SIZE", "WARMUP"]
