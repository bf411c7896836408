"""Issue 31: the models' public methods and constructors, fed junk of every kind.

Every method of MiniLM and SmolLM2 gets each kind of junk in each argument (``tests/lib/_fuzz.py``):
a finite result or a clear ``ValueError``/``TypeError``. A model class built directly refuses a config
(or GGUF metadata) that contradicts its tensors, which ``load()`` never passes (its files are hash-pinned).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mha.models import minilm, smollm2
from mha.models._files import package_dir
from mha.models.gguf_file import GGUFError
from mha.models.safetensors import load_safetensors

sys.path.insert(0, str(Path(__file__).parents[1] / "lib"))
from _fuzz import KINDS, run_kind  # noqa: E402


@pytest.fixture(scope="module")
def mini():
    return minilm.load()


@pytest.fixture(scope="module")
def smol():
    return smollm2.load()


def _method_cases(mini, smol):
    ids = smol.encode("The cat sat on the mat.")
    run = mini.run(["a cat", "the dog"])
    return {
        "minilm.batch": (mini.batch, lambda: ((["a cat"],), {})),
        "minilm.embed": (mini.embed, lambda: ((["a cat"],), {"remove": ()})),
        "minilm.embed_tokens": (mini.embed_tokens, lambda: ((mini.batch(["a cat"]).ids,), {})),
        "minilm.run": (mini.run, lambda: ((["a cat"],), {"remove": [(0, 1)]})),
        "minilm.steps": (mini.steps, lambda: ((run, 1), {"b": 1})),
        "smollm2.encode": (smol.encode, lambda: (("a cat",), {})),
        "smollm2.weights": (smol.weights, lambda: ((2,), {})),
        "smollm2.nll": (smol.nll, lambda: ((ids[:6],), {"remove": [(0, 1)], "method": "mean"})),
        "smollm2.logits": (smol.logits, lambda: ((ids[:4],), {"remove": (), "method": "zero"})),
        "smollm2.perplexity": (smol.perplexity, lambda: ((ids[:6],), {"remove": (), "method": "zero"})),
        "smollm2.ablation_nll": (smol.ablation_nll, lambda: ((ids[:6], [(0, 1)]), {"methods": ("zero",)})),
        "smollm2.attention_heads": (smol.attention_heads, lambda: ((np.ones((1, 3, smol.d), np.float32),
                                                                   smol.weights(0)), {})),
        "smollm2.feed_forward": (smol.feed_forward, lambda: ((np.ones((1, 3, smol.d), np.float32),
                                                             smol.weights(0)), {})),
    }


@pytest.mark.parametrize("kind", KINDS)
def test_every_model_method_refuses_junk_clearly(kind, mini, smol):
    outcomes = run_kind(kind, _method_cases(mini, smol), seconds=30.0, quick=True)
    bad = [o for o in outcomes if o.kind in ("ugly", "nonfinite", "hang")]
    assert not bad, "\n".join(f"{o.kind}: {o.case}({o.argument}={o.junk}) {o.message[:150]}" for o in bad[:20])


def test_minilm_built_directly_refuses_a_config_that_contradicts_its_tensors(mini):
    folder = package_dir(minilm.PACKAGE) / "model"
    config = json.loads((folder / "config.json").read_text())
    tensors = load_safetensors(folder / "model.safetensors")
    minilm.MiniLM(tensors, mini.tokenizer, config)  # the real one
    for change, words in [({"num_attention_heads": 6}, "trained with 12"), ({"num_hidden_layers": 2}, "more layers"),
                          ({"num_hidden_layers": 7}, "lacks"), ({"hidden_size": 192}, "shape"),
                          ({"layer_norm_eps": -1}, "layer_norm_eps"), ({"num_attention_heads": 5}, "divide")]:
        with pytest.raises(ValueError, match=words):
            minilm.MiniLM(tensors, mini.tokenizer, {**config, **change})
    with pytest.raises(ValueError, match="lacks the tensor"):
        minilm.MiniLM({k: v for k, v in tensors.items() if "layer.3.output.dense.bias" not in k}, mini.tokenizer,
                      config)
    with pytest.raises(TypeError, match="tensors"):
        minilm.MiniLM(None, mini.tokenizer, config)


@pytest.mark.parametrize("change, words", [
    ({"llama.attention.head_count": 18}, "rotary"), ({"llama.attention.head_count_kv": 1}, "attn_k"),
    ({"llama.block_count": 29}, "more layers"), ({"llama.block_count": 31}, "lacks"),
    ({"llama.attention.head_count": 18, "llama.attention.head_count_kv": 6}, "rotary"),
])
def test_smollm2_built_directly_refuses_metadata_that_contradicts_its_tensors(smol, change, words):
    gguf = copy.copy(smol.file)
    gguf.metadata = {**smol.file.metadata, **change}
    with pytest.raises(GGUFError, match=words):
        smollm2.SmolLM2(gguf)


@pytest.mark.parametrize("call", [lambda: minilm.load(123), lambda: smollm2.load(b"x" * 3)])
def test_a_path_of_the_wrong_type_is_refused(call):
    with pytest.raises(TypeError, match="path"):
        call()
