"""load_preset keeps each parsed preset (rubrics/loader.py): what a caller gets is its own copy, and a preset
file that changes is read again."""

from __future__ import annotations

import shutil

import pytest

from rubrics import loader
from rubrics.loader import RubricError, load_preset


def test_a_caller_changing_its_preset_leaves_the_next_one_whole():
    first = load_preset("rrgen-001")
    first["criteria"].clear()
    first["name"] = "changed"
    again = load_preset("rrgen-001")
    assert again["name"] != "changed" and again["criteria"]
    assert again == load_preset("rrgen-001") and again is not load_preset("rrgen-001")


def test_an_edited_preset_file_is_read_again(tmp_path, monkeypatch):
    shutil.copy(loader.PRESETS_DIR / "aqua-003.yaml", tmp_path / "aqua-003.yaml")
    monkeypatch.setattr(loader, "PRESETS_DIR", tmp_path)
    before = load_preset("aqua-003")["name"]
    path = tmp_path / "aqua-003.yaml"
    path.write_text(path.read_text().replace(f"name: {before}", "name: Edited name", 1))
    assert load_preset("aqua-003")["name"] == "Edited name"
    path.write_text(path.read_text().replace("  kind: choice", "  kind: no-such-kind", 1))
    with pytest.raises(RubricError) as refused:
        load_preset("aqua-003")
    assert "aqua-003.yaml" in str(refused.value.errors[0][0])
