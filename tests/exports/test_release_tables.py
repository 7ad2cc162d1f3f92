"""Releases that carry what was rated: the items and outputs, the consensus with its method and the
raters' estimates, as tables of their own (Parquet, JSONL) and as configs of a Hugging Face folder that
`datasets.load_dataset(folder, config)` opens."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pyarrow.parquet as pq
import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before `datasets` reads its config: nothing is downloaded
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import datasets  # noqa: E402

from annotation.datasets import export_chunks  # noqa: E402
from annotation.datasets.releases import ReleaseError, release_build, release_path, releases_create  # noqa: E402
from annotation.models import Output  # noqa: E402
from tests.exports.test_hf_release import media, no_network  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.django_db


def _parquet(study, fmt):
    return pq.read_table(io.BytesIO(b"".join(export_chunks(study, fmt))))


def _jsonl(study, fmt):
    return [json.loads(line) for line in b"".join(export_chunks(study, fmt)).decode().splitlines()]


def test_the_items_table_holds_every_output_with_its_text(rated_study):
    table = _parquet(rated_study, "items-parquet").to_pylist()
    stored = list(Output.objects.filter(item__study=rated_study).order_by("item_id", "position")
                  .values_list("item__external_id", "item__context", "position", "system", "kind", "content"))
    assert [(r["item"], r["context"], r["output"], r["system"], r["kind"], r["content"]) for r in table] == stored
    assert len(table) == 8 * 3 and not any(r["is_attention_check"] for r in table)
    assert "Answer 3 from sys-b\tç€ \\ end" in {r["content"] for r in table}  # texts as uploaded
    assert _jsonl(rated_study, "items-jsonl") == table  # the same rows, one JSON object per line


def test_the_consensus_table_says_how_each_row_was_made(rated_study):
    rows = _parquet(rated_study, "consensus-parquet").to_pylist()
    csv_rows = b"".join(export_chunks(rated_study, "consensus")).decode().splitlines()
    assert len(rows) == len(csv_rows) - 1  # the consensus CSV's rows, each with its method
    by_level = {(r["level"], r["criterion"]): r["method"] for r in rows}
    decisions = [r for r in rows if r["criterion"] == "decision"]
    assert decisions and {r["level"] for r in decisions} == {"criterion"}
    assert by_level[("overall", "overall")] == "rubric weights"
    numeric = [r for r in rows if r["level"] == "criterion" and r["criterion"] != "decision"]
    assert numeric and {r["method"] for r in numeric} == {"mean"}
    for r in decisions:  # the modelled label beside the raters' majority, with its posterior
        assert r["method"] and r["label"] in {"ACCEPT", "REJECT"} and r["majority"] in {"ACCEPT", "REJECT"}
        assert 0.5 <= r["posterior"] <= 1.0 and r["consensus"] is None
    assert _jsonl(rated_study, "consensus-jsonl") == rows


def test_load_dataset_opens_each_table_of_a_release_with_what_was_rated(rated_study, tmp_path, no_network):
    (release,) = [release_build(release_id=r.pk) for r in releases_create(
        study=rated_study, version="2.0.0", formats=["hf-full"], license="cc-by-4.0")]
    assert release.status == "ready" and release.file_path.endswith("-2.0.0.hf-full.zip")
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(release_path(release)) as zf:
        assert sorted(zf.namelist()) == ["README.md", "data/consensus.parquet", "data/items.parquet",
                                         "data/raters.parquet", "data/ratings.parquet"]
        zf.extractall(folder)
    card = (folder / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["ratings", "items", "consensus", "raters"]
    assert meta["configs"][0]["default"] is True

    cache = str(tmp_path / "hf-cache")
    loaded = {name: datasets.load_dataset(str(folder), name, cache_dir=cache)["train"]
              for name in ("ratings", "items", "consensus", "raters")}
    assert loaded["ratings"].num_rows == pq.read_table(folder / "data/ratings.parquet").num_rows > 0
    assert datasets.load_dataset(str(folder), cache_dir=cache)["train"].num_rows == loaded["ratings"].num_rows
    items = loaded["items"]
    assert items.num_rows == 24 and items.features["content"].dtype == "string"
    texts = dict(Output.objects.filter(item__study=rated_study).values_list("item__external_id", "content")
                 .order_by("item__external_id", "position")[:1])
    assert next(iter(texts.values())) == items[0]["content"]
    # every rated output is in the items table (a row without an output: an ignored assignment's)
    rated = {(r["item"], r["output"]) for r in loaded["ratings"].select_columns(["item", "output"])}
    shown = {(r["item"], r["output"]) for r in items.select_columns(["item", "output"])}
    assert {r for r in rated if r[1] is not None} <= shown and ("it-007", None) in rated
    consensus = loaded["consensus"]
    assert "method" in consensus.column_names and "posterior" in consensus.column_names
    raters = loaded["raters"].to_list()
    assert {r["rater"] for r in raters} == {"r0", "r1", "r2"}
    decision = [r for r in raters if r["criterion"] == "decision"]
    assert len(decision) == 3 and all(0 <= r["accuracy"] <= 1 and r["bias"] is None for r in decision)
    assert {r["method"] for r in decision} == {c["method"] for c in consensus.to_list() if c["criterion"] == "decision"}
    scales = {}
    for r in raters:
        if r["criterion"] != "decision":
            scales.setdefault(r["criterion"], {})[r["rater"]] = r["bias"]
    assert scales and all(min(b, key=b.get) == "r2" for b in scales.values())  # r2 rates a point lower

    assert "## Tables" in card and "| `items` | `data/items.parquet` | 24 |" in card
    methods = card.split("## Methods")[1]
    assert "Krippendorff" in methods and "raters" in methods  # the study's methods paragraph
    assert "| ACCEPT / REJECT (`decision`) | binary | ACCEPT, REJECT |" in card  # the rubric
    assert 'load_dataset("path/to/this/folder", "items")' in card


def test_a_release_with_what_was_rated_needs_a_license(rated_study):
    with pytest.raises(ReleaseError, match="license: a Hugging Face release states its license"):
        releases_create(study=rated_study, version="1.0.0", formats=["hf-full", "items-parquet"])
    assert not rated_study.releases.exists()


def test_the_ratings_only_card_is_unchanged_by_the_tables(codegen_study):
    """A ratings-only release still has its one default config (its bytes can be re-made)."""
    data = b"".join(export_chunks(codegen_study, "hf", dataset_version="1.0.0", license="mit"))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        card = zf.read("README.md").decode()
        assert zf.namelist() == ["data/ratings.parquet", "README.md"]
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["configs"] == [{"config_name": "default",
                                "data_files": [{"split": "train", "path": "data/ratings.parquet"}]}]
    assert "## Tables" not in card
