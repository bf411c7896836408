"""The public names that chapters and outside checks call stay where they are (issue 12's list).

Moving code is fine; moving these names is not. Each entry is imported by its dotted path.
"""

import importlib

import pytest

NAMES = [
    "mha.softmax", "mha.causal_mask", "mha.scaled_dot_product_attention", "mha.split_heads",
    "mha.merge_heads", "mha.multi_head_attention", "mha.attention_steps", "mha.attention_chunked",
    "mha.grouped_attention", "mha.examples.i_love_llms", "mha.checks.check", "mha.checks.labels",
    "mha.checks.Verdict", "mha.models.minilm.load", "mha.models.smollm2.load",
    "mha.costs.attention_param_count", "mha.costs.gpt2_param_count", "mha.costs.attention_flops",
    "mha.costs.score_entries", "mha.costs.kv_cache_bytes_per_token", "mha.costs.kv_cache_bytes",
    "mha.costs.get_model", "mha.costs.MODELS",
    "mha.heads.diagonal_mass", "mha.heads.previous_token_mass", "mha.heads.next_token_mass",
    "mha.heads.position_mass", "mha.heads.profile_heads", "mha.heads.heads_where", "mha.heads.check_layer",
    "mha.heads.group_by_layer", "mha.heads.remove_heads", "mha.heads.without_each_head",
    "mha.heads.value_norms", "mha.heads.weighted_value_norms", "mha.heads.cosine_drift",
    "mha.heads.paraphrase_margins", "mha.heads.ablation_summary",
]


def resolve(dotted):
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("dotted", NAMES)
def test_public_name_exists(dotted):
    assert resolve(dotted) is not None


def test_top_level_names_are_the_core_functions():
    import mha
    from mha import attention

    for name in ("softmax", "causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads",
                 "multi_head_attention", "attention_steps", "grouped_attention"):
        assert getattr(mha, name) is getattr(attention, name)
