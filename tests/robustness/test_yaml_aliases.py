"""YAML aliases are bounded before a document is built, wherever Concord reads YAML (rubrics by upload
and `load_rubric`, participant phases, judges, peer mappings and Potato configs): a few hundred bytes of
nested aliases ("billion laughs") get a clear error; ordinary anchors and merge keys still work."""

from __future__ import annotations

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.peers.mapping import MappingError, mapping_parse
from annotation.peers.readers import PeerFileError, read_potato
from annotation.questionnaires import PhasesError, phases_parse
from judges.config import JudgeConfigError, parse_judges_text
from rubrics.loader import RubricError, load_preset, parse_rubric_text
from rubrics.yaml_bounded import MAX_EXPANDED_NODES, YamlTooLarge, yaml_load

EXPANDS = "expand this document to more than"


def laughs(key: str = "lol", levels: int = 9) -> str:
    """Nine levels of ten aliases each: 10**9 values from about 530 bytes, under `key`."""
    lines = ["l0: &l0 [ha, ha, ha, ha, ha, ha, ha, ha, ha, ha]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n{key}: *l{levels - 1}\n"


def test_the_loader_counts_the_expansion_not_the_text():
    text = laughs()
    assert len(text) < 600
    with pytest.raises(YamlTooLarge) as refused:
        yaml_load(text)
    assert EXPANDS in str(refused.value) and f"{MAX_EXPANDED_NODES:,}" in str(refused.value)
    assert refused.value.problem_mark.line >= 4  # the level where the count passed the bound
    assert isinstance(refused.value, yaml.YAMLError)  # every caller's own YAML handler takes it


def test_loops_and_deep_nesting_are_refused_and_ordinary_anchors_load():
    with pytest.raises(YamlTooLarge, match="loop"):
        yaml_load("a: &a [1, *a]\n")
    with pytest.raises(YamlTooLarge, match="nested too deeply"):
        yaml_load("[" * 20000 + "]" * 20000)
    merged = yaml_load("base: &b {timeout_s: 60, max_retries: 5}\none: {<<: *b, max_retries: 2}\ntwo: *b\n")
    assert merged == {"base": {"timeout_s": 60, "max_retries": 5}, "one": {"timeout_s": 60, "max_retries": 2},
                      "two": {"timeout_s": 60, "max_retries": 5}}
    assert yaml_load(laughs(levels=4)) is not None  # 10**4 values: within the bound
    assert yaml_load("") is None and yaml_load("[1, 2]") == [1, 2]


def test_every_yaml_reader_refuses_the_bomb_by_name(tmp_path):
    with pytest.raises(RubricError) as rubric:
        parse_rubric_text(laughs("criteria"), filename="rubric.yaml")
    assert EXPANDS in str(rubric.value) and "line" in str(rubric.value)
    with pytest.raises(PhasesError) as phases:
        phases_parse(laughs("pre_questionnaire"))
    assert EXPANDS in str(phases.value) and phases.value.errors[0][0].startswith("line ")
    with pytest.raises(JudgeConfigError) as judges:
        parse_judges_text(laughs("judges"), filename="judges.yaml")
    assert EXPANDS in str(judges.value)
    with pytest.raises(MappingError, match=EXPANDS):
        mapping_parse(laughs("criteria"), rubric=load_preset("rrgen-001"))
    (tmp_path / "config.yaml").write_text(laughs("annotation_schemes"))
    with pytest.raises(PeerFileError) as potato:
        read_potato(tmp_path, None)
    assert EXPANDS in str(potato.value.errors)


@pytest.mark.django_db
def test_rubric_upload_and_load_rubric_answer_a_clear_error(client_for, admin_user, tmp_path):
    upload = SimpleUploadedFile("rubric.yaml", laughs("criteria").encode(), content_type="application/x-yaml")
    response = client_for(admin_user).post("/api/rubrics/file/", {"file": upload})
    assert response.status_code == 400
    assert EXPANDS in response.content.decode()
    path = tmp_path / "bomb.yaml"
    path.write_text(laughs("criteria"))
    with pytest.raises(CommandError, match=EXPANDS):
        call_command("load_rubric", str(path))
