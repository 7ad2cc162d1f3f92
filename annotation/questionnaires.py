"""A study's participant phases as data: the settings (consent, questionnaires, instructions with a
comprehension check, the attention policy, screen-out payment) and the answers to questions.

Pure data and functions, like rubrics.schema (Django only for gettext: the messages about a participant's
answers are in the rater's language): a JSON Schema checks shapes and types,
then the checks a schema cannot express; every error is `(path, message)` with a path such as
``pre_questionnaire.questions[1].max``. docs/participant-phases.md describes every field.

    phases_parse(text) -> dict                    # YAML or JSON text -> validated settings; PhasesError
    phases_validate(data) -> list[(path, message)]
    answers_clean(questions, answers) -> dict     # AnswersError {question key: message}
    check_errors(questions, answers) -> dict      # comprehension check: {key: message} for wrong answers
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from django.utils.translation import gettext as _
from jsonschema import Draft202012Validator

from config.limits import LIMITS
from rubrics.yaml_bounded import YamlTooLarge, yaml_load
from config.parsers import parse_number

KINDS = ("single", "multiple", "number", "text", "likert")
QUESTIONNAIRES = ("pre_questionnaire", "post_questionnaire")
TEXT_MAX = LIMITS["questionnaire.text"].value
DEFAULT_LIKERT = (1, 5)

_KEY = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,39}$"}
_TEXT = {"type": "string", "minLength": 1}
_QUESTION = {
    "type": "object",
    "required": ["key", "text", "kind"],
    "additionalProperties": False,
    "properties": {
        "key": _KEY, "text": _TEXT, "kind": {"enum": list(KINDS)}, "required": {"type": "boolean"},
        "options": {"type": "array", "minItems": 2, "items": _TEXT},
        "min": {"type": "number"}, "max": {"type": "number"}, "integer": {"type": "boolean"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "max_length": {"type": "integer", "minimum": 1, "maximum": TEXT_MAX},
        "correct": {},  # comprehension checks only: the answer the instructions lead to
    },
}
_QUESTIONNAIRE = {
    "type": "object", "required": ["questions"], "additionalProperties": False,
    "properties": {"title": {"type": "string"}, "intro": {"type": "string"},
                   "questions": {"type": "array", "minItems": 1, "items": _QUESTION}},
}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "consent": {"type": "object", "required": ["text"], "additionalProperties": False,
                    "properties": {"text": _TEXT, "return_code": {"type": "string"}}},
        "pre_questionnaire": _QUESTIONNAIRE,
        "instructions": {"type": "object", "additionalProperties": False,
                         "properties": {"text": {"type": "string"},
                                        "check": {"type": "array", "minItems": 1, "items": _QUESTION}}},
        "post_questionnaire": _QUESTIONNAIRE,
        "attention_policy": {"type": "object", "required": ["reject_after_failed"], "additionalProperties": False,
                             "properties": {"reject_after_failed": {"type": "integer", "minimum": 1},
                                            "text": {"type": "string"}}},
        "screened_out": {"type": "object", "additionalProperties": False,
                         "properties": {"payment": {"type": ["string", "number"]}, "code": {"type": "string"}}},
        "completion": {"type": "object", "additionalProperties": False, "properties": {"text": {"type": "string"}}},
    },
}
_VALIDATOR = Draft202012Validator(SCHEMA)


class PhasesError(ValueError):
    def __init__(self, errors: list[tuple[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in errors))


class AnswersError(ValueError):
    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {m}" for k, m in errors.items()))


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _question_errors(q: dict, where: str, *, check: bool) -> list[tuple[str, str]]:
    errors = []
    kind = q["kind"]
    if kind in ("single", "multiple") and "options" not in q:
        errors.append((where, f"a {kind} choice question needs options"))
    if len(set(q.get("options", []))) != len(q.get("options", [])):
        errors.append((f"{where}.options", "options repeat"))
    if kind == "number" and ("min" not in q or "max" not in q):
        errors.append((where, "a number question needs min and max"))
    if "min" in q and "max" in q and q["min"] >= q["max"]:
        errors.append((f"{where}.max", "must be above min"))
    if kind == "likert" and any(not float(v).is_integer() for v in (q.get("min", 1), q.get("max", 5))):
        errors.append((where, "a Likert scale has whole-number min and max"))
    if "correct" in q and not check:
        errors.append((f"{where}.correct", "only comprehension checks (instructions.check) have a correct answer"))
    if check and "correct" not in q:
        errors.append((where, "a comprehension check question needs its correct answer"))
    if check and "correct" in q:
        try:
            answers_clean([{**q, "required": True}], {q["key"]: q["correct"]})
        except AnswersError as exc:
            errors.append((f"{where}.correct", exc.errors[q["key"]]))
    return errors


def phases_validate(data: Any) -> list[tuple[str, str]]:
    errors = [(_path(e.absolute_path), e.message) for e in _VALIDATOR.iter_errors(data)]
    if errors:
        return sorted(errors)
    for section in (*QUESTIONNAIRES, "instructions"):
        questions = data.get(section, {}).get("check" if section == "instructions" else "questions", [])
        seen = set()
        for i, q in enumerate(questions):
            where = f"{section}.{'check' if section == 'instructions' else 'questions'}[{i}]"
            if q["key"] in seen:
                errors.append((f"{where}.key", f"{q['key']!r} is used twice"))
            seen.add(q["key"])
            errors += _question_errors(q, where, check=section == "instructions")
    if "payment" in data.get("screened_out", {}):
        try:
            if Decimal(str(data["screened_out"]["payment"])) < 0:
                raise InvalidOperation
        except InvalidOperation:
            errors.append(("screened_out.payment", "an amount such as 0.50"))
    return errors


def phases_parse(text: str) -> dict:
    """YAML (or JSON, which YAML reads too) -> validated settings; empty text is no phases."""
    if not text.strip():
        return {}
    try:
        data = yaml_load(text)
    except YamlTooLarge as exc:
        mark = exc.problem_mark
        raise PhasesError([(f"line {mark.line + 1}" if mark else "", exc.problem)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise PhasesError([(f"line {mark.line + 1}" if mark else "", "not valid YAML or JSON")]) from None
    errors = phases_validate(data)
    if errors:
        raise PhasesError(errors)
    return json.loads(json.dumps(data))  # plain JSON types only (YAML dates and the like are refused above)


def likert_range(q: dict) -> range:
    return range(int(q.get("min", DEFAULT_LIKERT[0])), int(q.get("max", DEFAULT_LIKERT[1])) + 1)


def _clean_one(q: dict, value: Any) -> Any:
    kind = q["kind"]
    if kind == "single":
        if value not in q["options"]:
            raise ValueError(_("choose one of the options"))
        return value
    if kind == "multiple":
        values = value if isinstance(value, list) else [value]
        if not all(v in q["options"] for v in values) or len(set(values)) != len(values):
            raise ValueError(_("choose among the options, each once"))
        return [o for o in q["options"] if o in values]
    if kind in ("number", "likert"):
        try:
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise TypeError
            # ASCII digits: float() takes '٣' and 'inf'; 1e999 is left to the range check below
            number = parse_number(value, "answer", finite=False)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of 400 digits
            raise ValueError(_("a number")) from None
        if kind == "likert":
            if not number.is_integer() or int(number) not in likert_range(q):
                r = likert_range(q)
                raise ValueError(_("a point of the scale, %(low)s to %(high)s") % {"low": r.start, "high": r.stop - 1})
            return int(number)
        if not q["min"] <= number <= q["max"]:
            raise ValueError(_("between %(low)s and %(high)s") % {"low": f"{q['min']:g}", "high": f"{q['max']:g}"})
        if q.get("integer") and not number.is_integer():
            raise ValueError(_("a whole number"))
        return int(number) if number.is_integer() else number
    if not isinstance(value, str):  # a JSON object or list is not an answer in words
        raise ValueError(_("an answer in words (text)"))
    text = value.strip()
    if "\x00" in text or _unpaired_surrogate(text):
        raise ValueError(_("text with a character that cannot be stored (NUL or a lone surrogate)"))
    if len(text) > q.get("max_length", TEXT_MAX):
        raise ValueError(_("at most %(n)s characters") % {"n": q.get("max_length", TEXT_MAX)})
    return text


def _unpaired_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _blank(value: Any) -> bool:
    return value is None or value == "" or value == []


def answers_clean(questions: list[dict], answers: Any) -> dict:
    """Every answer checked against its question, all at once; unknown keys are refused."""
    if not isinstance(answers, dict):
        raise AnswersError({"answers": _("an object of question key -> answer")})
    keys = {q["key"] for q in questions}
    errors = {k: _("not a question of this questionnaire") for k in answers if k not in keys}
    clean = {}
    for q in questions:
        value = answers.get(q["key"])
        if _blank(value):
            if q.get("required", True):
                errors[q["key"]] = _("an answer is required")
            continue
        try:
            clean[q["key"]] = _clean_one(q, value)
        except ValueError as exc:
            errors[q["key"]] = str(exc)
    if errors:
        raise AnswersError(errors)
    return clean


def check_errors(questions: list[dict], answers: dict) -> dict[str, str]:
    """Comprehension check: the questions answered otherwise than the instructions say."""
    wrong = {}
    for q in questions:
        expected = _clean_one(q, q["correct"])
        if answers.get(q["key"]) != expected:
            wrong[q["key"]] = _("not what the instructions say: read them again")
    return wrong


def answers_from_form(questions: list[dict], data) -> dict:
    """A form's fields (q_<key>, several for multiple choice) as answers."""
    out = {}
    for q in questions:
        name = f"q_{q['key']}"
        out[q["key"]] = data.getlist(name) if q["kind"] == "multiple" else data.get(name, "")
    return out


def question_fields(questions: list[dict], answers: dict, errors: dict | None = None) -> list[dict]:
    """What a form shows per question: its input, options or scale, the answer given so far, the error."""
    errors = errors or {}
    out = []
    for q in questions:
        given = answers.get(q["key"])
        given_list = [str(v) for v in given] if isinstance(given, list) else ([str(given)] if given not in (None, "") else [])
        if q["kind"] == "likert":
            labels = q.get("labels", {})
            options = [{"value": str(v), "label": labels.get(str(v), str(v)), "checked": str(v) in given_list}
                       for v in likert_range(q)]
        else:
            options = [{"value": o, "label": o, "checked": o in given_list} for o in q.get("options", [])]
        out.append({"key": q["key"], "name": f"q_{q['key']}", "text": q["text"], "kind": q["kind"],
                    "required": q.get("required", True), "options": options, "min": q.get("min"),
                    "max": q.get("max"), "step": "1" if q.get("integer") else "any",
                    "max_length": q.get("max_length", TEXT_MAX), "value": given_list[0] if given_list else "",
                    "error": errors.get(q["key"], "")})
    return out


def phases_dump(phases: dict) -> str:
    """The settings as the YAML an admin edits (empty for none)."""
    return yaml.safe_dump(phases, sort_keys=False, allow_unicode=True, width=100) if phases else ""
