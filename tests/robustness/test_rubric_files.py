"""Rubric files (rubrics.loader): whatever the YAML or JSON, load_rubric_text returns a rubric the
platform can store and use, or raises RubricError whose every error has a path into the document
and a message; never another exception. Pure: no database."""

from __future__ import annotations

import copy
import json
import math
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from rubrics.loader import RubricError, list_presets, load_preset, load_rubric_text, validate_rubric
from rubrics.schema import SCALE_KINDS
from tests.robustness.strategies import any_text, json_values

PRESETS = {slug: load_preset(slug) for slug in list_presets()}


def resolves(doc, path: str) -> bool:
    """Whether an error path points into `doc`: every step exists, except that the last may name a
    missing field ("criteria[0].key is required") or a set of unknown fields ("{a, b}")."""
    node, rest = doc, path
    while rest:
        if rest.startswith("["):
            match = re.match(r"\[(\d+)\]", rest)
            if not match or not isinstance(node, list) or int(match.group(1)) >= len(node):
                return False
            node, rest = node[int(match.group(1))], rest[match.end():]
            continue
        rest = rest.removeprefix(".")
        if not isinstance(node, dict):
            return False
        keys = [str(k) for k in node if rest.startswith(str(k)) and rest[len(str(k)):][:1] in ("", ".", "[")]
        if keys:
            key = max(keys, key=len)
            node = next(v for k, v in node.items() if str(k) == key)
            rest = rest[len(key):]
            continue
        return rest.startswith("{") or not re.search(r"[.\[]", rest)
    return True


def integer_fields(rubric: dict):
    for c in rubric["criteria"]:
        if c["kind"] in SCALE_KINDS:
            yield c["min"]
            yield c["max"]
            yield from (lv["value"] for lv in c["levels"])
            yield from c["sparing_values"]


def check(text: str, filename: str) -> dict | RubricError:
    """The property: a usable rubric or a RubricError with paths and messages."""
    try:
        rubric = load_rubric_text(text, filename=filename)
    except RubricError as exc:
        assert exc.errors
        for path, message in exc.errors:
            assert isinstance(path, str) and isinstance(message, str) and message
        return exc
    usable(rubric)
    return rubric


def usable(rubric: dict) -> None:
    # Stored as jsonb: JSON without NaN/Infinity; read back unchanged; validating again changes nothing.
    assert json.loads(json.dumps(rubric, allow_nan=False)) == rubric
    assert validate_rubric(rubric) == rubric
    # The workspace draws scales with range(min, max + 1).
    assert all(type(v) is int for v in integer_fields(rubric))
    for c in rubric["criteria"]:
        if c["kind"] in ("likert", "confidence"):
            assert len(range(c["min"], c["max"] + 1)) <= 101


# ---------------------------------------------------------------- arbitrary text


@given(text=st.text(st.characters(exclude_categories=("Cs",)), max_size=300),
       filename=st.sampled_from(["r.yaml", "r.json", "r.txt", ""]))
def test_any_text_is_a_rubric_or_a_clean_error(text, filename):
    check(text, filename)


@given(doc=st.dictionaries(st.sampled_from(["slug", "name", "criteria", "groups", "item_options", "judge",
                                            "description", "x"]) | any_text, json_values, max_size=6),
       as_json=st.booleans())
def test_any_mapping_is_a_rubric_or_a_clean_error(doc, as_json):
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    check(text, "r.json" if as_json else "r.yaml")


YAML_ODDITIES = {
    "integer keys beside string keys": "slug: a\nname: b\ncriteria: []\n1: x\nz: y\n",
    "a date": "slug: a\nname: b\ndescription: 2024-01-01\ncriteria: [{key: k, name: K, kind: text}]\n",
    "binary": "slug: a\nname: !!binary aGVsbG8=\ncriteria: [{key: k, name: K, kind: text}]\n",
    "a set": "slug: a\nname: b\ncriteria: !!set {x: null}\n",
    "unhashable key": "? [a, b]\n: c\n",
    "anchors and aliases": "a: &x [1, 2]\nslug: s\nname: n\ncriteria: [*x, *x]\n",
    "NaN weight": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: text, weight: .nan}]\n",
    "infinite weight": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: text, weight: .inf}]\n",
    "infinite group weight": ("slug: a\nname: b\ngroups: [{key: g, name: G, weight: .inf}]\n"
                              "criteria: [{key: k, name: K, kind: text, group: g}]\n"),
    "NaN step": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: numeric, min: 0, max: 5, step: .nan}]\n",
    "float bounds": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: likert, min: 1.0, max: 5.0}]\n",
    "a million-point Likert scale": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: likert, min: 0, max: 1000000}]\n",
    "huge integer": "slug: a\nname: b\ncriteria: [{key: k, name: K, kind: likert, min: 1, max: " + "9" * 5000 + "}]\n",
    "tab indentation": "slug: a\n\tname: b\n",
    "a NUL": "slug: a\nname: \"b\\0\"\ncriteria: [{key: k, name: K, kind: text}]\n",
}


@pytest.mark.parametrize("case", YAML_ODDITIES, ids=list(YAML_ODDITIES))
def test_yaml_oddities_are_a_usable_rubric_or_a_clean_error(case):
    check(YAML_ODDITIES[case], "r.yaml")


@pytest.mark.parametrize("text,filename", [("[" * 100_000, "r.json"), ("[" * 100_000, "r.yaml"),
                                           ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 5000)), "r.yaml")])
def test_deep_nesting_is_a_clean_error(text, filename):
    with pytest.raises(RubricError) as caught:
        load_rubric_text(text, filename=filename)
    assert "line" in str(caught.value) or "deep" in str(caught.value)


def test_a_nul_in_a_name_is_refused_with_its_path():
    with pytest.raises(RubricError) as caught:
        load_rubric_text(YAML_ODDITIES["a NUL"], filename="r.yaml")
    assert [p for p, _ in caught.value.errors] == ["name"]


@pytest.mark.parametrize("case,path", [("NaN weight", "criteria[0].weight"), ("infinite weight", "criteria[0].weight"),
                                       ("infinite group weight", "groups[0].weight"),
                                       ("NaN step", "criteria[0].step"),
                                       ("a million-point Likert scale", "criteria[0].max")])
def test_numbers_that_cannot_be_used_are_refused_with_their_path(case, path):
    with pytest.raises(RubricError) as caught:
        load_rubric_text(YAML_ODDITIES[case], filename="r.yaml")
    assert [p for p, _ in caught.value.errors] == [path]


def test_integral_float_bounds_become_integers():
    (criterion,) = load_rubric_text(YAML_ODDITIES["float bounds"], filename="r.yaml")["criteria"]
    assert (criterion["min"], criterion["max"]) == (1, 5) and type(criterion["min"]) is int


# ---------------------------------------------------------------- a preset with one thing changed


def locations(node, path=()):
    """Every (container path, key or index) in a JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k
            yield from locations(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield path, i
            yield from locations(v, path + (i,))


@st.composite
def mutated_preset(draw):
    doc = copy.deepcopy(PRESETS[draw(st.sampled_from(sorted(PRESETS)))])
    parent_path, key = draw(st.sampled_from(list(locations(doc))))
    parent = doc
    for step in parent_path:
        parent = parent[step]
    action = draw(st.sampled_from(["replace", "delete", "add", "number"]))
    if action == "replace":
        parent[key] = draw(json_values)
    elif action == "number":
        parent[key] = draw(st.one_of(st.floats(), st.integers(), st.sampled_from([0, -1, 1.0, 1.5, 10**6])))
    elif action == "delete":
        del parent[key]
    elif isinstance(parent, dict):
        parent[draw(any_text)] = draw(json_values)
    else:
        parent.append(draw(json_values))
    return doc


@given(doc=mutated_preset(), as_json=st.booleans())
def test_a_preset_with_one_change_is_usable_or_refused_with_paths_into_it(doc, as_json):
    text = json.dumps(doc) if as_json else yaml.safe_dump(doc, allow_unicode=True)
    result = check(text, "r.json" if as_json else "r.yaml")
    if isinstance(result, RubricError):
        for path, _ in result.errors:
            assert path, f"an error without a path: {result}"
            assert resolves(doc, path), f"{path!r} does not point into the rubric: {result}"


def test_every_preset_is_usable():
    for rubric in PRESETS.values():
        usable(rubric)
        assert math.isfinite(sum(c["weight"] for c in rubric["criteria"]))
