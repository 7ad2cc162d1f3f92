"""Parse, validate and normalise rubrics; read the built-in presets. Pure code, no Django.

    data = parse_rubric_text(text, filename="rubric.yaml")   # -> dict, or RubricError
    rubric = validate_rubric(data)                           # -> normalised dict, or RubricError
    rubric_checksum(rubric)                                  # -> sha256 hex of canonical JSON
    list_presets(); load_preset("rrgen-001")                 # built-in presets, validated
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any, Iterable

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from rubrics.schema import COMPARATIVE_KINDS, DEFAULT_TUPLE_SIZE, RUBRIC_SCHEMA, SCALE_KINDS, semantic_errors
from rubrics.yaml_bounded import yaml_load

PRESETS_DIR = Path(__file__).resolve().parent / "presets"

_VALIDATOR = Draft202012Validator(RUBRIC_SCHEMA)
MAX_DEPTH = 32  # the format nests five levels; deeper input is not a rubric


class RubricError(ValueError):
    """A rubric that cannot be used. `.errors` is a list of (path, message) pairs."""

    def __init__(self, errors: Iterable[tuple[str, str]]):
        self.errors: list[tuple[str, str]] = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(f"{path}: {message}" if path else message for path, message in self.errors)


# ---------------------------------------------------------------- parsing


def parse_rubric_text(text: str, *, filename: str = "") -> dict:
    """YAML or JSON text -> dict. The extension decides; without one, a leading '{' means JSON."""
    suffix = Path(filename).suffix.lower()
    as_json = suffix == ".json" or (suffix not in (".yaml", ".yml") and text.lstrip().startswith("{"))
    kind = "JSON" if as_json else "YAML"
    try:
        data = json.loads(text) if as_json else yaml_load(text)
    except json.JSONDecodeError as exc:
        raise RubricError([("", f"invalid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}")])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise RubricError([("", f"invalid YAML: {where}{problem}")])
    except RecursionError:  # both parsers recurse per nesting level
        raise RubricError([("", f"invalid {kind}: nested too deeply")]) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise RubricError([("", f"invalid {kind}: {exc}")]) from None
    if not isinstance(data, dict):
        raise RubricError([("", "a rubric must be a mapping (key: value) at the top level")])
    return data


# ---------------------------------------------------------------- validation


def _format_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _schema_error(err: ValidationError) -> tuple[str, str]:
    """Turn a jsonschema error into (path, readable message)."""
    path = _format_path(err.absolute_path)
    v, arg = err.validator, err.validator_value
    if v == "required":
        # jsonschema reports the object; name the missing field itself
        missing = err.message.split("'")[1] if "'" in err.message else "?"
        return _join(path, missing), "is required"
    if v == "additionalProperties":
        extra = sorted(map(str, set(err.instance) - set(err.schema.get("properties", {}))))
        if len(extra) == 1 and extra[0].strip():
            return _join(path, extra[0]), "unknown field"
        # several, or one with a blank name: a set, so that a blank name still shows as ""
        return _join(path, "{" + ", ".join(e if e.strip() else repr(e).replace("'", '"') for e in extra) + "}"), \
            "unknown field"
    if v == "enum":
        return path, f"must be one of: {', '.join(map(str, arg))} (got {err.instance!r})"
    if v == "type":
        kinds = arg if isinstance(arg, list) else [arg]
        names = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "an integer",
                 "number": "a number", "boolean": "true or false"}
        return path, "must be " + " or ".join(names.get(k, k) for k in kinds) + f" (got {err.instance!r})"
    if v == "pattern":
        return path, f"must match {arg} (got {err.instance!r})"
    if v == "minItems":
        return path, f"must have at least {arg} item(s)"
    if v == "minLength":
        return path, "must not be empty"
    if v in ("minimum", "exclusiveMinimum"):
        return path, f"must be {'>=' if v == 'minimum' else '>'} {arg} (got {err.instance!r})"
    return path, err.message


def schema_errors(data: Any) -> list[tuple[str, str]]:
    return sorted(_schema_error(e) for e in _VALIDATOR.iter_errors(data))


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "contains a NUL character, which cannot be stored"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate, which is not valid Unicode"
    return None


def json_errors(data: Any) -> list[tuple[str, str]]:
    """What stops `data` from being stored as JSON (jsonb): values YAML has and JSON lacks (dates,
    bytes, sets), NaN and infinities, keys that are not text, NUL characters, nesting deeper than
    MAX_DEPTH. Iterative, so no input can exhaust the stack."""
    errors: list[tuple[str, str]] = []
    stack: list[tuple[Any, tuple, int]] = [(data, (), 0)]
    while stack and len(errors) < 20:
        node, parts, depth = stack.pop()
        path = _format_path(parts)
        if depth > MAX_DEPTH:
            errors.append((path, f"nested deeper than {MAX_DEPTH} levels"))
        elif isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    errors.append((_join(path, str(key)), f"a key must be text (got {key!r})"))
                elif why := _text_problem(key):
                    errors.append((_join(path, key), f"the key {why}"))
                else:
                    stack.append((child, parts + (key,), depth + 1))
        elif isinstance(node, list):
            stack.extend((child, parts + (i,), depth + 1) for i, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            errors.append((path, f"must be a finite number (got {node!r})"))
        elif isinstance(node, str):
            if why := _text_problem(node):
                errors.append((path, why))
        elif node is not None and not isinstance(node, (bool, int, float)):
            errors.append((path, f"must be text, a number, true/false, a list or a mapping "
                                  f"(got a {type(node).__name__}: {node!r:.40})"))
    return sorted(errors)


def _integer(value):
    # JSON Schema counts 1.0 as an integer; consumers call range() on scale bounds.
    return int(value) if isinstance(value, float) else value


def _normalise(data: dict) -> dict:
    """Fill defaults so consumers never need `.get(..., default)`; integers as int."""
    out = copy.deepcopy(data)
    out.setdefault("description", "")
    out.setdefault("instructions", "")
    out.setdefault("scope_note", "")
    out.setdefault("groups", [])
    for g in out["groups"]:
        g.setdefault("weight", 1.0)
        g.setdefault("description", "")
    opts = out.setdefault("item_options", {})
    opts.setdefault("allow_ignore", False)
    opts.setdefault("ignore_reasons", [])
    opts.setdefault("comment", False)
    judge = out.setdefault("judge", {})
    judge.setdefault("style", "generic")
    judge.setdefault("base_prompt", "")
    judge.setdefault("output_format", "")
    judge.setdefault("few_shot", {})
    for c in out["criteria"]:
        c.setdefault("description", "")
        c.setdefault("target", "item" if c["kind"] in COMPARATIVE_KINDS else "output")
        c.setdefault("required", True)
        c.setdefault("weight", 1.0)
        c.setdefault("overall", False)
        c.setdefault("reasoning", "none")
        c.setdefault("hint", "")
        c.setdefault("group", None)
        c.setdefault("aspects", [])
        for a in c["aspects"]:
            a.setdefault("description", "")
        if c["kind"] == "confidence":
            c.setdefault("min", 1)
            c.setdefault("max", 5)
        if c["kind"] in SCALE_KINDS:
            c.setdefault("levels", [])
            c.setdefault("sparing_values", [])
            c["min"], c["max"] = _integer(c["min"]), _integer(c["max"])
            c["sparing_values"] = [_integer(v) for v in c["sparing_values"]]
            for lv in c["levels"]:
                lv["value"] = _integer(lv["value"])
                lv.setdefault("label", "")
                lv.setdefault("description", "")
        if c["kind"] == "numeric":
            c.setdefault("step", 1)
        for ch in c.get("choices", []):
            ch["value"] = _integer(ch["value"])
            ch.setdefault("label", str(ch["value"]))
            ch.setdefault("description", "")
        if c["kind"] == "spans":
            c.setdefault("labels", [])
        if c["kind"] in ("pairwise", "ranking"):
            c.setdefault("ties", c["kind"] == "pairwise")
        if c["kind"] == "pairwise":
            c.setdefault("strength", False)
        if c["kind"] == "best_worst":
            c.setdefault("tuple_size", DEFAULT_TUPLE_SIZE)
    return out


def validate_rubric(data: Any) -> dict:
    """Validate a parsed rubric; return a normalised copy or raise RubricError listing every problem.

    Idempotent: validating a normalised rubric returns an equal dict.
    """
    errors = json_errors(data) or schema_errors(data)
    if errors:  # relations between fields are only meaningful on well-typed data
        raise RubricError(errors)
    errors = semantic_errors(data)
    if errors:
        raise RubricError(errors)
    return _normalise(data)


def load_rubric_text(text: str, *, filename: str = "") -> dict:
    """parse_rubric_text + validate_rubric."""
    return validate_rubric(parse_rubric_text(text, filename=filename))


def rubric_checksum(data: dict) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace). Pass a validated rubric so that
    an upload differing only in defaults or layout gets the same checksum."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- presets


def list_presets() -> list[str]:
    """Slugs of the built-in presets (file names in rubrics/presets/ without .yaml), sorted."""
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_preset(slug: str) -> dict:
    """A built-in preset, validated and normalised. Raises KeyError for an unknown slug."""
    if slug not in list_presets():
        raise KeyError(f"unknown rubric preset {slug!r}; known: {', '.join(list_presets())}")
    path = PRESETS_DIR / f"{slug}.yaml"
    # A copy: callers may change what they get, and the parsed preset is kept for the next call
    return copy.deepcopy(_preset_from_text(path.read_text(encoding="utf-8"), path.name))


@functools.lru_cache(maxsize=32)
def _preset_from_text(text: str, filename: str) -> dict:
    """Parsing and validating the seven presets took 80 ms a call (presets are installed for every new study on
    one, and for each test that makes one); kept by the file's text, so an edited preset is read again."""
    try:
        return load_rubric_text(text, filename=filename)
    except RubricError as exc:  # a broken preset is a bug; say which file
        raise RubricError([(f"{filename}: {p}" if p else filename, m) for p, m in exc.errors]) from None
