"""rubrics.loader: parsing, validation with readable paths, normalisation, checksums."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from rubrics.loader import (
    RubricError,
    list_presets,
    load_preset,
    parse_rubric_text,
    rubric_checksum,
    validate_rubric,
)

PRESETS = ["aqua-003", "codegen-002", "compare-pairwise", "compare-ranking", "feedback-000", "fulltext-004", "rrgen-001"]


def minimal() -> dict:
    return {
        "slug": "demo",
        "name": "Demo",
        "criteria": [
            {"key": "quality", "name": "Quality", "kind": "likert", "min": 1, "max": 7,
             "levels": [{"value": 1, "label": "Not at all"}, {"value": 7, "label": "Completely"}],
             "sparing_values": [3, 5]},
            {"key": "decision", "name": "Decision", "kind": "binary",
             "choices": [{"value": "ACCEPT"}, {"value": "REJECT"}]},
        ],
    }


def errors_of(data) -> list[tuple[str, str]]:
    with pytest.raises(RubricError) as info:
        validate_rubric(data)
    return info.value.errors


# ---------------------------------------------------------------- presets


def test_every_preset_is_listed_and_valid():
    assert list_presets() == PRESETS
    for slug in PRESETS:
        rubric = load_preset(slug)
        assert rubric["slug"] == slug
        assert validate_rubric(rubric) == rubric  # normalised form is a fixed point


def test_unknown_preset_is_a_key_error():
    with pytest.raises(KeyError, match="no-such"):
        load_preset("no-such")


# ---------------------------------------------------------------- normalisation


def test_defaults_are_filled():
    rubric = validate_rubric(minimal())
    quality, decision = rubric["criteria"]
    assert (quality["required"], quality["target"], quality["weight"]) == (True, "output", 1.0)
    assert (quality["reasoning"], quality["overall"], quality["group"]) == ("none", False, None)
    assert quality["levels"][0]["description"] == ""
    assert decision["choices"][0]["label"] == "ACCEPT"
    assert "levels" not in decision
    assert rubric["groups"] == []
    assert rubric["item_options"] == {"allow_ignore": False, "ignore_reasons": [], "comment": False}
    assert rubric["judge"] == {"style": "generic", "base_prompt": "", "output_format": "", "few_shot": {}}


def test_confidence_defaults_to_one_to_five():
    data = minimal()
    data["criteria"].append({"key": "conf", "name": "Confidence", "kind": "confidence"})
    conf = validate_rubric(data)["criteria"][2]
    assert (conf["min"], conf["max"]) == (1, 5)


def test_validation_does_not_mutate_its_input():
    data = minimal()
    before = copy.deepcopy(data)
    validate_rubric(data)
    assert data == before


# ---------------------------------------------------------------- bad input, one case each


def _set(path_fn):
    def apply(data):
        path_fn(data)
        return data
    return apply


BAD = [
    ("level out of range", lambda d: d["criteria"][0]["levels"].append({"value": 9}),
     "criteria[0].levels[2].value", "must be between 1 and 7"),
    ("min not below max", lambda d: d["criteria"][0].update(min=7, max=7),
     "criteria[0].max", "greater than min"),
    ("max missing on likert", lambda d: d["criteria"][0].pop("max"),
     "criteria[0].max", "is required for a likert criterion"),
    ("duplicate criterion key", lambda d: d["criteria"][1].update(key="quality"),
     "criteria", "'quality' appears more than once"),
    ("duplicate level value", lambda d: d["criteria"][0]["levels"].append({"value": 1}),
     "criteria[0].levels", "value 1 appears more than once"),
    ("binary without choices", lambda d: d["criteria"][1].pop("choices"),
     "criteria[1].choices", "is required for a binary criterion"),
    ("binary with three choices", lambda d: d["criteria"][1]["choices"].append({"value": "MAYBE"}),
     "criteria[1].choices", "exactly 2 choices"),
    ("choice with one option", lambda d: d["criteria"][1].update(kind="choice", choices=[{"value": "TP"}]),
     "criteria[1].choices", "at least 2 choices"),
    ("choices on a likert", lambda d: d["criteria"][0].update(choices=[{"value": "a"}, {"value": "b"}]),
     "criteria[0].choices", "not allowed for a likert criterion"),
    ("levels on a binary", lambda d: d["criteria"][1].update(levels=[{"value": 1}]),
     "criteria[1].levels", "not allowed for a binary criterion"),
    ("unknown group", lambda d: d["criteria"][0].update(group="technical"),
     "criteria[0].group", "unknown group 'technical'"),
    ("sparing value out of range", lambda d: d["criteria"][0].update(sparing_values=[3, 8]),
     "criteria[0].sparing_values[1]", "must be between 1 and 7"),
    ("labels on a likert", lambda d: d["criteria"][0].update(labels=["relevant"]),
     "criteria[0].labels", "only for a spans criterion"),
    ("step on a likert", lambda d: d["criteria"][0].update(step=0.5),
     "criteria[0].step", "only for a numeric criterion"),
    ("reasoning on spans", lambda d: d["criteria"].append(
        {"key": "hl", "name": "Highlights", "kind": "spans", "reasoning": "optional"}),
     "criteria[2].reasoning", "must be none for a spans criterion"),
    ("unknown kind", lambda d: d["criteria"][0].update(kind="stars"),
     "criteria[0].kind", "must be one of: likert, numeric"),
    ("unknown target", lambda d: d["criteria"][0].update(target="pair"),
     "criteria[0].target", "must be one of: output, item"),
    ("missing key", lambda d: d["criteria"][0].pop("key"),
     "criteria[0].key", "is required"),
    ("missing slug", lambda d: d.pop("slug"), "slug", "is required"),
    ("bad slug", lambda d: d.update(slug="My Rubric"), "slug", "must match"),
    ("bad criterion key", lambda d: d["criteria"][0].update(key="Quality-1"), "criteria[0].key", "must match"),
    ("unknown field", lambda d: d["criteria"][0].update(colour="red"), "criteria[0].colour", "unknown field"),
    ("wrong type", lambda d: d["criteria"][0].update(min="1"), "criteria[0].min", "must be an integer"),
    ("negative weight", lambda d: d["criteria"][0].update(weight=-1), "criteria[0].weight", "must be >= 0"),
    ("no criteria", lambda d: d.update(criteria=[]), "criteria", "at least 1 item"),
    ("two overall criteria", lambda d: [c.update(kind="likert", min=1, max=5, overall=True) or c.pop("choices", None)
                                        for c in d["criteria"]],
     "criteria[1].overall", "only one criterion may be overall"),
    ("ignore reasons without allow_ignore", lambda d: d.update(item_options={"ignore_reasons": ["spam"]}),
     "item_options.ignore_reasons", "needs allow_ignore: true"),
    ("few-shot for unknown criterion", lambda d: d.update(judge={"few_shot": {"nope": []}}),
     "judge.few_shot.nope", "unknown criterion 'nope'"),
    ("bad few-shot kind", lambda d: d.update(judge={"few_shot": {"quality": [
        {"kind": "neutral", "instruction": "i", "response": "r", "judgement": "5"}]}}),
     "judge.few_shot.quality[0].kind", "must be one of: positive, negative"),
    ("unknown judge style", lambda d: d.update(judge={"style": "gpt"}), "judge.style", "must be one of"),
    ("duplicate group key", lambda d: d.update(groups=[{"key": "g", "name": "G"}, {"key": "g", "name": "H"}]),
     "groups", "'g' appears more than once"),
]


@pytest.mark.parametrize("mutate, path, message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_rubric_names_the_path(mutate, path, message):
    data = minimal()
    mutate(data)
    errors = errors_of(data)
    assert any(p == path and message in m for p, m in errors), errors


def test_error_lists_every_problem_one_per_line():
    data = minimal()
    data["criteria"][0]["levels"].append({"value": 0})
    data["criteria"][0]["sparing_values"] = [9]
    data["criteria"][1].pop("choices")
    with pytest.raises(RubricError) as info:
        validate_rubric(data)
    lines = str(info.value).splitlines()
    assert lines == [
        "criteria[0].levels[2].value: must be between 1 and 7",
        "criteria[0].sparing_values[0]: must be between 1 and 7",
        "criteria[1].choices: is required for a binary criterion",
    ]


def test_non_mapping_is_rejected():
    assert errors_of(["a", "b"])[0][0] == ""


# ---------------------------------------------------------------- parsing


def test_parse_yaml_and_json_give_the_same_rubric():
    data = minimal()
    from_yaml = parse_rubric_text(yaml.safe_dump(data), filename="r.yaml")
    from_json = parse_rubric_text(json.dumps(data), filename="r.json")
    sniffed = parse_rubric_text(json.dumps(data))
    assert from_yaml == from_json == sniffed == data


def test_parse_reports_yaml_line():
    with pytest.raises(RubricError) as info:
        parse_rubric_text("slug: x\ncriteria: [1,\n", filename="r.yml")
    assert "invalid YAML: line" in str(info.value)


def test_parse_reports_json_position():
    with pytest.raises(RubricError, match=r"invalid JSON: line 2 column"):
        parse_rubric_text('{"slug": "x",\n "name": }', filename="r.json")


def test_parse_rejects_a_scalar_document():
    with pytest.raises(RubricError, match="mapping"):
        parse_rubric_text("just text", filename="r.yaml")


# ---------------------------------------------------------------- checksum


def test_checksum_is_sha256_of_canonical_json():
    import hashlib

    data = {"b": 1, "a": "é"}
    expected = hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
    assert rubric_checksum(data) == expected


def test_checksum_ignores_layout_and_defaults_but_not_content():
    data = minimal()
    explicit = copy.deepcopy(data)
    explicit["criteria"][0]["required"] = True  # a default written out
    a = rubric_checksum(validate_rubric(parse_rubric_text(yaml.safe_dump(data), filename="a.yaml")))
    b = rubric_checksum(validate_rubric(parse_rubric_text(json.dumps(explicit, indent=4), filename="b.json")))
    assert a == b
    changed = copy.deepcopy(data)
    changed["criteria"][0]["levels"][0]["label"] = "Not at all!"
    assert rubric_checksum(validate_rubric(changed)) != a


# ---------------------------------------------------------------- the slider widget (issue 25)


def test_a_scale_may_be_shown_as_a_slider_and_it_is_part_of_the_version():
    data = minimal()
    plain = validate_rubric(data)
    data["criteria"][0]["widget"] = "slider"
    slid = validate_rubric(data)
    assert slid["criteria"][0]["widget"] == "slider"
    assert rubric_checksum(slid) != rubric_checksum(plain)  # loading it makes a new rubric version
    assert "widget" not in plain["criteria"][0]  # rubrics without it keep their checksum


def test_slider_only_on_scales_and_only_known_widgets():
    data = minimal()
    data["criteria"][1]["widget"] = "slider"
    assert ("criteria[1].widget", "is not allowed for a binary criterion") in errors_of(data)
    data = minimal()
    data["criteria"][0]["widget"] = "dial"
    assert any(path == "criteria[0].widget" for path, _ in errors_of(data))


def test_presets_show_seed_000_confidence_and_seed_004_scales_as_sliders():
    confidence = next(c for c in load_preset("feedback-000")["criteria"] if c["key"] == "confidence")
    assert (confidence["widget"], confidence["min"], confidence["max"]) == ("slider", 0, 100)
    assert all(c["widget"] == "slider" for c in load_preset("fulltext-004")["criteria"] if c["kind"] == "numeric")
