import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from rubrics.loader import load_preset
from rubrics.models import Rubric, RubricVersion


def _write(tmp_path, data, name="rubric.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith(".yaml") else json.dumps(data))
    return path


def test_load_rubric_creates_then_versions_then_is_a_noop(db, tmp_path, capsys):
    data = load_preset("rrgen-001")
    data["slug"] = "my-rrgen"
    call_command("load_rubric", str(_write(tmp_path, data)))
    assert "created version 1" in capsys.readouterr().out
    call_command("load_rubric", str(_write(tmp_path, data)))
    assert "unchanged" in capsys.readouterr().out
    data["criteria"][0]["description"] = "An edited description."
    call_command("load_rubric", str(_write(tmp_path, data, "rubric.json")))
    assert "created version 2" in capsys.readouterr().out
    versions = RubricVersion.objects.filter(rubric__slug="my-rrgen").order_by("version")
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].definition["criteria"][0]["description"] != "An edited description."


def test_a_study_keeps_its_pinned_version_when_the_rubric_is_edited(make_study, tmp_path):
    study = make_study("aqua-003")
    pinned = study.rubric_version
    data = load_preset("aqua-003")
    data["instructions"] = "New guidance."
    call_command("load_rubric", str(_write(tmp_path, data)))
    study.refresh_from_db()
    assert study.rubric_version == pinned
    assert Rubric.objects.get(slug="aqua-003").versions.count() == 2


def test_bad_rubric_is_refused_naming_the_field(db, tmp_path):
    data = load_preset("rrgen-001")
    data["slug"] = "broken"
    data["criteria"][0]["max"] = "seven"
    with pytest.raises(CommandError) as excinfo:
        call_command("load_rubric", str(_write(tmp_path, data)))
    assert "criteria[0].max" in str(excinfo.value)
    assert not Rubric.objects.filter(slug="broken").exists()


def test_every_preset_installs(preset_version):
    seeds = {"feedback-000", "rrgen-001", "codegen-002", "aqua-003", "fulltext-004"}
    assert set(preset_version) == seeds | {"compare-pairwise", "compare-ranking"}
    kinds = {c["kind"] for v in preset_version.values() for c in v.criteria}
    assert {"pairwise", "ranking", "best_worst"} <= kinds
    # Written reasoning is attached to criteria (reasoning: required), so no preset needs a bare text criterion.
    assert {"likert", "numeric", "choice", "binary", "confidence", "spans"} <= kinds
    assert any(c["reasoning"] == "required" for c in preset_version["feedback-000"].criteria)


def test_a_text_criterion_is_a_valid_kind(db, tmp_path):
    data = {"slug": "notes", "name": "Notes", "criteria": [{"key": "notes", "name": "Notes", "kind": "text"}]}
    call_command("load_rubric", str(_write(tmp_path, data)))
    assert RubricVersion.objects.get(rubric__slug="notes").criteria[0]["kind"] == "text"
