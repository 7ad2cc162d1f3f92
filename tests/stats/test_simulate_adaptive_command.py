"""manage.py simulate_adaptive: both policies print their savings against the uniform design of the same run."""

import io
import json

import pytest
from django.core.management import CommandError, call_command


def _run(*args) -> str:
    out = io.StringIO()
    call_command("simulate_adaptive", *args, stdout=out)
    return out.getvalue()


def test_adaptive_redundancy_prints_both_designs():
    text = _run("adaptive_redundancy", "--seeds", "1", "--items", "300")
    assert "uniform  5 labels an item: accuracy" in text and "saving" in text


def test_active_pairs_json_has_both_designs():
    result = json.loads(_run("active_pairs", "--seeds", "2", "--systems", "6", "--budget", "600", "--json"))
    assert len(result["uniform_spearman"]) == len(result["active_spearman"]) == 12
    assert result["seeds"] == [0, 1]


def test_bad_arguments_are_named():
    with pytest.raises(CommandError, match="seeds"):
        _run("active_pairs", "--seeds", "0")
    with pytest.raises(CommandError, match="random_share"):
        _run("active_pairs", "--random-share", "0")
