"""The rubric format: a JSON Schema (draft 2020-12) plus the checks a schema cannot express.

Pure data and functions, no Django. `docs/rubric-format.md` describes every field.
The schema checks shapes and types; `semantic_errors` checks relations between fields
(unique keys, bounds, references). Both report `(path, message)` pairs where a path
looks like ``criteria[2].levels[0].value``.
"""

from __future__ import annotations

from typing import Any

KINDS = ("likert", "numeric", "choice", "binary", "confidence", "text", "spans", "pairwise", "ranking", "best_worst")
# Comparative kinds ask one question about the outputs shown together (always target: item):
# pairwise shows two, best_worst a tuple of `tuple_size`, ranking whatever the item shows.
COMPARATIVE_KINDS = ("pairwise", "ranking", "best_worst")
SUBSET_KINDS = ("pairwise", "best_worst")  # decide how many outputs an assignment shows
DEFAULT_TUPLE_SIZE = 4
SCALE_KINDS = ("likert", "numeric", "confidence")  # have integer min/max and levels
# How a scale is shown to raters: the default (buttons, or a number box for a wide scale) or a slider
# with no value until the rater places it. Part of the rubric version, since it can change answers.
WIDGETS = ("buttons", "slider")
MAX_SCALE_POINTS = 101  # likert/confidence points are drawn one button each; 0..100 is the widest sane scale
CHOICE_KINDS = ("choice", "binary")  # have ordered choices
TARGETS = ("output", "item")
REASONING = ("none", "optional", "required")
# Per-step questions on trajectory outputs (annotation/trajectory.py names the step kinds).
SCOPES = ("trajectory", "assistant_turns", "steps")
STEP_KINDS = ("system", "user", "assistant", "tool_call", "tool_result")
DEFAULT_STEPS = ("tool_call",)
MAX_STEP_CRITERION_KEY = 64  # + "@m1999.t99" fits a rating's 80-character criterion
JUDGE_STYLES = ("feedback_000", "rrgen", "codegen_002", "aqua_003", "fulltext_004", "generic")
FEW_SHOT_KINDS = ("positive", "negative")

_TEXT = {"type": "string"}
_NONEMPTY = {"type": "string", "minLength": 1}

_LEVEL = {
    "type": "object",
    "required": ["value"],
    "additionalProperties": False,
    "properties": {"value": {"type": "integer"}, "label": _TEXT, "description": _TEXT},
}

_CHOICE = {
    "type": "object",
    "required": ["value"],
    "additionalProperties": False,
    "properties": {
        # yes/no, ACCEPT/REJECT, TP/FP3 ... or small integers
        "value": {"type": ["string", "integer"], "minLength": 1},
        "label": _TEXT,
        "description": _TEXT,
    },
}

_ASPECT = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {"name": _NONEMPTY, "description": _TEXT},
}

_CRITERION = {
    "type": "object",
    "required": ["key", "name", "kind"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "pattern": "^[a-z0-9_]+$"},
        "name": _NONEMPTY,
        "description": _TEXT,
        "kind": {"enum": list(KINDS)},
        "target": {"enum": list(TARGETS)},
        "required": {"type": "boolean"},
        "min": {"type": "integer"},
        "max": {"type": "integer"},
        "step": {"type": "number", "exclusiveMinimum": 0},
        "levels": {"type": "array", "items": _LEVEL},
        "choices": {"type": "array", "items": _CHOICE},
        "hint": _TEXT,
        "sparing_values": {"type": "array", "items": {"type": "integer"}},
        "group": {"type": ["string", "null"], "pattern": "^[a-z0-9_]+$"},  # null: no group
        "weight": {"type": "number", "minimum": 0},
        "overall": {"type": "boolean"},
        "aspects": {"type": "array", "items": _ASPECT},
        "reasoning": {"enum": list(REASONING)},
        "labels": {"type": "array", "items": _NONEMPTY},
        "ties": {"type": "boolean"},
        "strength": {"type": "boolean"},
        "tuple_size": {"type": "integer", "minimum": 3, "maximum": 12},
        "widget": {"enum": list(WIDGETS)},
        "scope": {"enum": list(SCOPES)},
        "steps": {"type": "array", "minItems": 1, "items": {"enum": list(STEP_KINDS)}},
    },
}

_GROUP = {
    "type": "object",
    "required": ["key", "name"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "pattern": "^[a-z0-9_]+$"},
        "name": _NONEMPTY,
        "weight": {"type": "number", "minimum": 0},
        "description": _TEXT,
    },
}

_FEW_SHOT = {
    "type": "object",
    "required": ["kind", "instruction", "response", "judgement"],
    "additionalProperties": False,
    "properties": {
        "kind": {"enum": list(FEW_SHOT_KINDS)},
        "instruction": _NONEMPTY,
        "response": _NONEMPTY,
        "judgement": _NONEMPTY,
    },
}

RUBRIC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://concord.local/schemas/rubric.json",
    "title": "Concord rubric",
    "type": "object",
    "required": ["slug", "name", "criteria"],
    "additionalProperties": False,
    "properties": {
        "slug": {"type": "string", "pattern": "^[a-z0-9-]+$"},
        "name": _NONEMPTY,
        "description": _TEXT,
        "instructions": _TEXT,
        "scope_note": _TEXT,
        "criteria": {"type": "array", "minItems": 1, "items": _CRITERION},
        "groups": {"type": "array", "items": _GROUP},
        "item_options": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "allow_ignore": {"type": "boolean"},
                "ignore_reasons": {"type": "array", "items": _NONEMPTY},
                "comment": {"type": "boolean"},
            },
        },
        "judge": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "style": {"enum": list(JUDGE_STYLES)},
                "base_prompt": _TEXT,
                "output_format": _TEXT,
                "few_shot": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": _FEW_SHOT},
                },
            },
        },
    },
}


def _duplicates(values: list) -> list:
    seen, dup = set(), []
    for v in values:
        if v in seen and v not in dup:
            dup.append(v)
        seen.add(v)
    return dup


def _criterion_errors(i: int, c: dict, group_keys: set[str]) -> list[tuple[str, str]]:
    """Relations inside one (schema-valid) criterion."""
    p = f"criteria[{i}]"
    kind = c["kind"]
    errors: list[tuple[str, str]] = []

    if kind in SCALE_KINDS:
        lo, hi = c.get("min"), c.get("max")
        if kind == "confidence":  # a 1..5 scale unless told otherwise
            lo = 1 if lo is None else lo
            hi = 5 if hi is None else hi
        for name, v in (("min", lo), ("max", hi)):
            if v is None:
                errors.append((f"{p}.{name}", f"is required for a {kind} criterion"))
        if lo is not None and hi is not None:
            if lo >= hi:
                errors.append((f"{p}.max", f"must be greater than min ({lo})"))
            elif kind != "numeric" and hi - lo + 1 > MAX_SCALE_POINTS:
                errors.append((f"{p}.max", f"a {kind} scale has at most {MAX_SCALE_POINTS} points "
                                           f"(min {lo}); use a numeric criterion for a wider range"))
            else:
                levels = c.get("levels", [])
                for j, level in enumerate(levels):
                    if not lo <= level["value"] <= hi:
                        errors.append(
                            (f"{p}.levels[{j}].value", f"must be between {lo} and {hi}")
                        )
                for v in _duplicates([lv["value"] for lv in levels]):
                    errors.append((f"{p}.levels", f"value {v} appears more than once"))
                for j, v in enumerate(c.get("sparing_values", [])):
                    if not lo <= v <= hi:
                        errors.append(
                            (f"{p}.sparing_values[{j}]", f"must be between {lo} and {hi}")
                        )
        if "step" in c and kind != "numeric":
            errors.append((f"{p}.step", "is allowed only for a numeric criterion"))
    else:
        for name in ("min", "max", "step", "levels", "sparing_values", "widget"):
            if name in c:
                errors.append((f"{p}.{name}", f"is not allowed for a {kind} criterion"))

    if kind in CHOICE_KINDS:
        choices = c.get("choices")
        if not choices:
            errors.append((f"{p}.choices", f"is required for a {kind} criterion"))
        else:
            if kind == "binary" and len(choices) != 2:
                errors.append((f"{p}.choices", "a binary criterion needs exactly 2 choices"))
            elif kind == "choice" and len(choices) < 2:
                errors.append((f"{p}.choices", "a choice criterion needs at least 2 choices"))
            for v in _duplicates([ch["value"] for ch in choices]):
                errors.append((f"{p}.choices", f"value {v!r} appears more than once"))
    elif "choices" in c:
        errors.append((f"{p}.choices", f"is not allowed for a {kind} criterion"))

    if "labels" in c:
        if kind != "spans":
            errors.append((f"{p}.labels", "is allowed only for a spans criterion"))
        for v in _duplicates(c["labels"]):
            errors.append((f"{p}.labels", f"label {v!r} appears more than once"))

    if kind in ("text", "spans") and c.get("reasoning", "none") != "none":
        errors.append((f"{p}.reasoning", f"must be none for a {kind} criterion"))

    if c.get("group") is not None and c["group"] not in group_keys:
        errors.append((f"{p}.group", f"refers to unknown group {c['group']!r}"))

    for v in _duplicates([a["name"] for a in c.get("aspects", [])]):
        errors.append((f"{p}.aspects", f"aspect {v!r} appears more than once"))

    errors.extend(_comparative_errors(p, c))
    errors.extend(_scope_errors(p, c))
    return errors


def _scope_errors(p: str, c: dict) -> list[tuple[str, str]]:
    scope = c.get("scope", "trajectory")
    errors: list[tuple[str, str]] = []
    if scope != "trajectory":
        # Highlights may be per step (offsets into the step's text); free text and comparisons may not.
        if c["kind"] == "text" or c["kind"] in COMPARATIVE_KINDS:
            errors.append((f"{p}.scope", f"a {c['kind']} criterion rates the whole output (scope trajectory)"))
        if c.get("target", "output") != "output":
            errors.append((f"{p}.scope", "a per-step criterion must have target output"))
        if len(c["key"]) > MAX_STEP_CRITERION_KEY:
            errors.append((f"{p}.key", f"a per-step criterion's key has at most {MAX_STEP_CRITERION_KEY} characters "
                                       "(its ratings are stored as <key>@<step>)"))
    if "steps" in c:
        if scope != "steps":
            errors.append((f"{p}.steps", "is allowed only with scope steps"))
        for v in _duplicates(c["steps"]):
            errors.append((f"{p}.steps", f"step kind {v!r} appears more than once"))
    return errors


def step_kinds(c: dict) -> tuple[str, ...] | None:
    """The step kinds a per-step criterion asks about, or None for a whole-output one."""
    scope = c.get("scope", "trajectory")
    if scope == "assistant_turns":
        return ("assistant",)
    if scope == "steps":
        return tuple(c.get("steps") or DEFAULT_STEPS)
    return None


def _comparative_errors(p: str, c: dict) -> list[tuple[str, str]]:
    kind = c["kind"]
    allowed = {"ties": ("pairwise", "ranking"), "strength": ("pairwise",), "tuple_size": ("best_worst",)}
    errors = [(f"{p}.{name}", f"is allowed only for a {' or '.join(kinds)} criterion")
              for name, kinds in allowed.items() if name in c and kind not in kinds]
    if kind in COMPARATIVE_KINDS:
        if c.get("target", "item") != "item":
            errors.append((f"{p}.target", f"must be item for a {kind} criterion (it compares the outputs shown)"))
        for name in ("aspects", "sparing_values"):
            if c.get(name):
                errors.append((f"{p}.{name}", f"is not allowed for a {kind} criterion"))
    return errors


def semantic_errors(data: dict) -> list[tuple[str, str]]:
    """Checks beyond the schema. Expects `data` to be valid against RUBRIC_SCHEMA."""
    errors: list[tuple[str, str]] = []
    criteria = data["criteria"]
    groups = data.get("groups", [])

    for v in _duplicates([g["key"] for g in groups]):
        errors.append(("groups", f"group key {v!r} appears more than once"))
    for v in _duplicates([c["key"] for c in criteria]):
        errors.append(("criteria", f"criterion key {v!r} appears more than once"))

    group_keys = {g["key"] for g in groups}
    for i, c in enumerate(criteria):
        errors.extend(_criterion_errors(i, c, group_keys))

    overall = [i for i, c in enumerate(criteria) if c.get("overall")]
    if len(overall) > 1:
        errors.append((f"criteria[{overall[1]}].overall", "only one criterion may be overall"))

    subset = {c["kind"] for c in criteria if c["kind"] in SUBSET_KINDS}
    if len(subset) > 1:
        errors.append(("criteria", "a rubric may ask pairwise or best_worst questions, not both: "
                                   "each decides how many outputs an assignment shows"))
    sizes = {c.get("tuple_size", DEFAULT_TUPLE_SIZE) for c in criteria if c["kind"] == "best_worst"}
    if len(sizes) > 1:
        errors.append(("criteria", f"best_worst questions must share one tuple_size (got {sorted(sizes)})"))

    options = data.get("item_options", {})
    if options.get("ignore_reasons") and not options.get("allow_ignore"):
        errors.append(("item_options.ignore_reasons", "needs allow_ignore: true"))

    keys = {c["key"] for c in criteria}
    for key in data.get("judge", {}).get("few_shot", {}):
        if key not in keys:
            errors.append((f"judge.few_shot.{key}", f"refers to unknown criterion {key!r}"))
    return errors
