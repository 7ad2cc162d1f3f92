"""Writes for a rater's answers: drafts, submits (idempotent upserts), revisions, attention checks.

    assignment_save_draft(assignment=a, answers=answers, time_on_task_ms=None) -> Assignment
    assignment_submit(assignment=a, answers=answers, time_on_task_ms=0) -> Assignment   # AnswerError, SubmitError

Answers address responses by their shown number (1..K), never by output id or system:

    {"responses": {"1": {"fluency": {"value": 6, "reasoning": ""}, "decision": "ACCEPT",
                         "highlights": [{"start": 0, "end": 9, "text": "Thank you", "label": "relevant"}]}},
     "item": {"<item-level key>": {"value": ...}},
     "ignored": false, "ignore_reason": "", "comment": ""}

A criterion's answer is either its bare value or {"value": ..., "reasoning": ...}.
A submit is strict: whatever the rubric does not ask for (an unknown criterion or field, reasoning
where none is asked, a comment or ignore reason where the rubric has none) is refused by name, never
dropped, and every message says what the rater should do ("Fluency: choose a whole number from 1 to 7").
`answers_from_form` builds this from the workspace form (fields r<n>__<key>, r<n>__<key>__reasoning,
item__<key>, ignored, ignore_reason, comment).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from django.utils.translation import gettext as _, gettext_noop
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation import step_questions
from annotation.db import prepared_cursor
from annotation.models import Assignment, Output, Rating, Study, StudyMember
from annotation.services import comparative
from annotation.services.assignments import assignment_reclaim, lease_duration
from annotation.services.routing_flag import routing_refresh_request
from annotation.services.active_inference import active_after_submit
from annotation.services.sampling_policy import adaptive_after_submit
from annotation.services.training import training_record
from config.parsers import BadNumber, parse_number
from config.limits import limit, text_problem
from rubrics.schema import step_kinds

MAX_TIME_ON_TASK_MS = 24 * 3600 * 1000  # a client clock gone wrong must not poison the statistics

_TRUE_VALUES = {"ACCEPT", "YES", "TRUE", "1", "Y", "PASS"}
_FALSE_VALUES = {"REJECT", "NO", "FALSE", "0", "N", "FAIL"}


class AnswerError(ValueError):
    """Answers that cannot be stored. `.errors` maps a form field name (r2__fluency, item__x,
    ignore_reason, answers) to a message a rater can act on."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))


class SubmitError(ValueError):
    """The assignment cannot take a submit now (study closed, slot given to someone else)."""


PAUSED_RELEASED = gettext_noop("The researchers paused your work on this study, and this item went back to the pool: "
                               "it can no longer be saved or submitted. They can resume you.")
TRAINING_ANSWERED = gettext_noop("This training answer was submitted and its feedback shown; it cannot be changed. "
                                 "Go on with the next item.")


@dataclass(frozen=True)
class RatingRow:
    response: int | None  # shown number 1..K, None for an item-level criterion
    criterion: str
    value: Any
    score: float | None
    reasoning: str


# ---------------------------------------------------------------- parsing (pure)


def field_name(response: int | None, key: str) -> str:
    return f"r{response}__{key}" if response is not None else f"item__{key}"


_FORM_FIELD = re.compile(r"^(?:r(\d+)|item)__(.+?)(__reasoning)?$")


def answers_from_form(data: Mapping[str, Any], *, rubric: dict, n_responses: int) -> dict:
    """The workspace form (a QueryDict or dict of strings) -> answers. Spans fields hold JSON.
    Fields the rubric does not ask for (r<n>__<unknown key>, reasoning where none is asked, a
    comment where comments are off) are carried into the answers, so that a submit refuses them
    by name instead of dropping them."""
    def entry(response: int | None, criterion: dict) -> dict | None:
        name = field_name(response, criterion["key"])
        raw = data.get(name, "")
        if criterion["kind"] == "spans":
            try:
                raw = json.loads(raw) if raw else []
            except json.JSONDecodeError:
                raw = "invalid"
        reasoning = str(data.get(f"{name}__reasoning", "") or "")
        if raw in ("", [], None) and not reasoning:
            return None
        return {"value": raw, "reasoning": reasoning}

    responses: dict[str, dict] = {}
    item: dict[str, dict] = {}
    known: set[str] = set()
    step_spans = {c["key"] for c in rubric["criteria"] if c["kind"] == "spans" and step_kinds(c) is not None}
    for criterion in rubric["criteria"]:
        if comparative.is_comparative(criterion):
            name = field_name(None, criterion["key"])
            known.update(comparative.form_fields(criterion, name, n_responses))
            value = comparative.form_value(criterion, data, name, n_responses)
            reasoning = str(data.get(f"{name}__reasoning", "") or "")
            if value is not None or reasoning:
                item[criterion["key"]] = {"value": value, "reasoning": reasoning}
        elif criterion["target"] == "item":
            known.add(field_name(None, criterion["key"]))
            if (e := entry(None, criterion)) is not None:
                item[criterion["key"]] = e
        else:
            for n in range(1, n_responses + 1):
                known.add(field_name(n, criterion["key"]))
                if (e := entry(n, criterion)) is not None:
                    responses.setdefault(str(n), {})[criterion["key"]] = e
    for name in data:
        match = _FORM_FIELD.match(name)
        raw = str(data.get(name, "") or "")
        base = name.removesuffix("__reasoning") if match and match.group(3) else name
        if not match or base in known or not raw.strip():
            continue
        response, key = match.group(1), match.group(2)
        value: Any = raw
        base_key, step = step_questions.split_key(key)
        if step and base_key in step_spans and not match.group(3):  # a per-step highlight's field holds JSON
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = "invalid"
            if value == []:
                continue
        block = item if response is None else responses.setdefault(response, {})
        e = block.setdefault(key, {"value": None, "reasoning": ""})
        e["reasoning" if match.group(3) else "value"] = value
    return {
        "responses": responses, "item": item,
        "ignored": str(data.get("ignored", "")).lower() in {"1", "on", "true", "yes"},
        "ignore_reason": str(data.get("ignore_reason", "") or "").strip(),
        "comment": str(data.get("comment", "") or "").strip(),
    }


_ANSWER_FIELDS = ("responses", "item", "ignored", "ignore_reason", "comment")
_ENTRY_FIELDS = ("value", "reasoning")


def answers_normalise(answers: Any) -> dict:
    """Any JSON the API received -> the answers shape with every entry as {"value", "reasoning"}.
    Refuses (AnswerError) fields the answers shape does not have, rather than dropping them."""
    if not isinstance(answers, dict):
        raise AnswerError({"answers": "must be an object"})
    errors: dict[str, str] = {}
    extra = sorted(str(k) for k in answers if k not in _ANSWER_FIELDS)
    if extra:
        errors["answers"] = (f"unknown field(s) {', '.join(map(repr, extra))}; answers have "
                             + ", ".join(_ANSWER_FIELDS))

    def entries(block: Any, where: str, response: str | None) -> dict:
        if block in (None, ""):
            return {}
        if not isinstance(block, dict):
            errors[where] = "must be an object keyed by criterion"
            return {}
        out = {}
        for key, e in block.items():
            name = f"r{response}__{key}" if response is not None else f"item__{key}"
            if isinstance(e, dict):
                unknown = sorted(str(k) for k in e if k not in _ENTRY_FIELDS)
                if unknown or "value" not in e:
                    errors[name] = (f"an answer is a value or {{\"value\": ..., \"reasoning\": ...}}; "
                                    + (f"unknown field(s) {', '.join(map(repr, unknown))}" if unknown
                                       else "the value is missing"))
                    continue
                reasoning = e.get("reasoning")
                if reasoning is not None and not isinstance(reasoning, str):
                    errors[f"{name}__reasoning"] = "reasoning must be text"
                    continue
                out[str(key)] = {"value": e["value"], "reasoning": reasoning or ""}
            else:
                out[str(key)] = {"value": e, "reasoning": ""}
        return out

    responses = answers.get("responses") or {}
    if not isinstance(responses, dict):
        raise AnswerError({"responses": "must be an object keyed by response number"})
    normalised = {
        "responses": {str(n): entries(block, f"responses.{n}", str(n)) for n, block in responses.items()},
        "item": entries(answers.get("item"), "item", None),
        "ignored": answers.get("ignored", False),
        "ignore_reason": answers.get("ignore_reason"),
        "comment": answers.get("comment"),
    }
    if normalised["ignored"] is None:
        normalised["ignored"] = False
    if not isinstance(normalised["ignored"], bool):
        errors["ignored"] = "must be true or false"
    for field in ("ignore_reason", "comment"):
        value = normalised[field]
        if value is not None and not isinstance(value, str):
            errors[field] = "must be text"
        normalised[field] = str(value or "").strip()
    errors.update(_oversized_text(normalised))
    errors.update(_unstorable_text(normalised))
    if errors:
        raise AnswerError(errors)
    return normalised


def _oversized_text(normalised: dict) -> dict[str, str]:
    """Errors for text past config/limits.py's bounds (comment, ignore reason, each reasoning), by
    field: refused at a submit and at a draft alike, so no stored answer holds more."""
    found = {}
    for field in ("ignore_reason", "comment"):
        if problem := text_problem(f"assignment.{field}", normalised[field]):
            found[field] = problem
    for n, block in [*normalised["responses"].items(), (None, normalised["item"])]:
        for key, entry in block.items():
            if problem := text_problem("rating.reasoning", entry["reasoning"].strip(), name="reasoning"):
                found[(f"r{n}__{key}" if n is not None else f"item__{key}") + "__reasoning"] = problem
    return found


def _unstorable_text(normalised: dict) -> dict[str, str]:
    """Errors for text PostgreSQL cannot store (a NUL character, an unpaired surrogate from a JSON
    escape), by field, rather than a database error at the write. One JSON dump decides whether
    any text needs a look."""
    dumped = json.dumps(normalised, ensure_ascii=False)
    try:
        dumped.encode()
        if "\\u0000" not in dumped:
            return {}
    except UnicodeEncodeError:
        pass
    found: dict[str, str] = {}
    fields = [(f"r{n}__{key}" if n is not None else f"item__{key}", entry)
              for n, block in [*normalised["responses"].items(), (None, normalised["item"])]
              for key, entry in block.items()]
    places = [(f"{name}__reasoning", entry["reasoning"]) for name, entry in fields]
    places += [(name, entry["value"]) for name, entry in fields]
    places += [(field, normalised[field]) for field in ("ignore_reason", "comment")]
    for name, value in places:
        if (problem := _unstorable(value)) is not None:
            found[name] = problem
    if (problem := _unstorable([*normalised["responses"], *(name for name, _ in fields)])) is not None:
        found["answers"] = f"a response number or criterion key {problem}"
    return found


def _unstorable(value: Any) -> str | None:
    if isinstance(value, dict):
        return next(filter(None, map(_unstorable, [*value.keys(), *value.values()])), None)
    if isinstance(value, list):
        return next(filter(None, map(_unstorable, value)), None)
    if not isinstance(value, str):
        return None
    if "\x00" in value:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        value.encode()
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (a \\ud800-\\udfff escape on its own), which is not text"
    return None


# ---------------------------------------------------------------- validation (pure)


def _is_blank(value: Any) -> bool:
    return value is None or value == "" or value == []


def _where(response: int | None) -> str:
    """"Response n: " before an error message; translated only when there is an error to write
    (answers_check runs for every cell of every submit)."""
    return _("Response %(n)s: ") % {"n": response} if response is not None else ""


def _scale_hint(criterion: dict) -> str:
    """What a rater must give for a scale, in their words."""
    lo, hi = criterion["min"], criterion["max"]
    step = criterion.get("step", 1) if criterion["kind"] == "numeric" else 1
    if step == 1 and float(lo).is_integer():
        return _("choose a whole number from %(lo)s to %(hi)s") % {"lo": lo, "hi": hi}
    return _("choose a number from %(lo)s to %(hi)s in steps of %(step)s") % {"lo": lo, "hi": hi, "step": step}


def _scale_value(criterion: dict, value: Any) -> int | float:
    # The hint is translated only when it is the error: this runs for every cell of every submit.
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(_scale_hint(criterion))
    try:  # ASCII and finite only: float() also reads '٣', '1_0' and 'inf'
        number = parse_number(value, criterion["key"])
    except (BadNumber, OverflowError):  # OverflowError: a JSON integer of 400 digits
        raise ValueError(_scale_hint(criterion)) from None
    lo, hi = criterion["min"], criterion["max"]
    step = criterion.get("step", 1) if criterion["kind"] == "numeric" else 1
    steps = (number - lo) / step
    if number < lo or number > hi or abs(steps - round(steps)) > 1e-9:
        raise ValueError(_scale_hint(criterion))
    number = lo + round(steps) * step  # the scale point itself: 2.5000000001 or 1e-41 stored as 2.5 or 0
    return int(number) if number == int(number) else number


def _choice_value(criterion: dict, value: Any) -> Any:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        for choice in criterion["choices"]:
            if str(choice["value"]) == str(value).strip():
                return choice["value"]
    raise ValueError("choose one of " + ", ".join(str(c["value"]) for c in criterion["choices"]))


def binary_score(criterion: dict, value: Any) -> float:
    """ACCEPT/yes = 1, REJECT/no = 0; other binary labels by order (the first choice is 1)."""
    label = str(value).upper()
    if label in _TRUE_VALUES:
        return 1.0
    if label in _FALSE_VALUES:
        return 0.0
    return 1.0 if str(criterion["choices"][0]["value"]) == str(value) else 0.0


def span_text(content: str) -> str:
    """The text span offsets index: the content with line breaks as browsers show them (\r\n -> \n)."""
    return content.replace("\r\n", "\n").replace("\r", "\n")


def _spans_value(criterion: dict, value: Any, content: str) -> list[dict]:
    # A per-step question's highlights index its step's text (annotation.step_questions.text_of).
    where = "the step's text" if "step" in criterion else "the response"
    content = span_text(content)
    if not isinstance(value, list):
        raise ValueError("give a list of highlights")
    if len(value) > limit("rating.spans"):
        raise ValueError(f"at most {limit('rating.spans')} highlights")
    labels = criterion.get("labels") or []
    out = []
    for span in value:
        if not isinstance(span, dict):
            raise ValueError("each highlight needs start and end")
        start, end = span.get("start"), span.get("end")
        if not (isinstance(start, int) and isinstance(end, int)) or isinstance(start, bool) or isinstance(end, bool):
            raise ValueError("each highlight needs integer start and end offsets")
        if not 0 <= start < end <= len(content):
            raise ValueError(f"highlight {start}-{end} lies outside {where} (length {len(content)})")
        text = content[start:end]
        if "text" in span and span["text"] != text:
            raise ValueError(f"highlight {start}-{end} does not match {where}: it reads {text!r}")
        label = span.get("label") or ""
        if not isinstance(label, str):
            raise ValueError("a highlight's label is text")
        if label and labels and label not in labels:
            raise ValueError(f"label must be one of {', '.join(labels)}")
        out.append({"start": start, "end": end, "text": text, "label": label})
    unique = {(s["start"], s["end"], s["label"]): s for s in out}
    return sorted(unique.values(), key=lambda s: (s["start"], s["end"], s["label"]))


def _clean_value(criterion: dict, value: Any, content: str) -> tuple[Any, float | None]:
    kind = criterion["kind"]
    if kind in ("likert", "numeric", "confidence"):
        v = _scale_value(criterion, value)
        return v, float(v)
    if kind == "binary":
        v = _choice_value(criterion, value)
        return v, binary_score(criterion, v)
    if kind == "choice":
        v = _choice_value(criterion, value)
        return v, float(v) if isinstance(v, int) and not isinstance(v, bool) else None
    if kind == "text":
        if not isinstance(value, str):
            raise ValueError("write it as text")
        if problem := text_problem("rating.text", value, name="text"):
            raise ValueError(problem)
        return value.strip(), None
    if kind == "spans":
        return _spans_value(criterion, value, content), None
    raise ValueError(f"unknown criterion kind {kind!r}")


def answers_check(rubric: dict, answers: dict, contents: list[str], context: str = "",
                  shown_ids: list[int] | None = None, kinds: list[str] | None = None) -> list[RatingRow]:
    """Validate normalised answers for a final submit against the rubric and the shown responses
    (contents[n-1] is Response n's raw text, shown_ids[n-1] its output id, which comparative answers
    are stored by; item-level highlights index the context; kinds[n-1] its kind, which decides the
    per-step questions of a trajectory). Returns the rating rows; raises AnswerError naming every
    problem. An ignored item stores no ratings."""
    options = rubric["item_options"]
    n = len(contents)
    errors = _not_asked(rubric, answers, n)
    if answers["ignored"]:
        if not options.get("allow_ignore"):
            errors["ignored"] = "this study does not allow ignoring an item"
        elif not answers["ignore_reason"]:
            errors["ignore_reason"] = _("say why this example should be ignored")
        elif options.get("ignore_reasons") and answers["ignore_reason"] not in options["ignore_reasons"]:
            errors["ignore_reason"] = _("choose one of the reasons: %s") % "; ".join(options["ignore_reasons"])
        if errors:
            raise AnswerError(errors)
        return []
    rows: list[RatingRow] = []
    targets = [(None, answers["item"], context)]
    per_response = [(i, answers["responses"].get(str(i), {}), contents[i - 1]) for i in range(1, n + 1)]
    kinds = kinds or ["text"] * n
    steps_asked: set[tuple[int | None, str]] = set()
    for rubric_criterion in rubric["criteria"]:
        places = targets if rubric_criterion["target"] == "item" else per_response
        for response, block, content, criterion in _questions(rubric_criterion, places, kinds):
            name = field_name(response, criterion["key"])
            if "step" in criterion:
                steps_asked.add((response, criterion["key"]))
            entry = block.get(criterion["key"]) or {"value": None, "reasoning": ""}
            value, reasoning = entry["value"], (entry.get("reasoning") or "").strip()
            if _is_blank(value):
                if criterion["required"]:
                    errors[name] = _where(response) + _("%(criterion)s is required") % {"criterion": criterion["name"]}
                continue
            try:
                if comparative.is_comparative(criterion):
                    clean, score = comparative.clean_comparative(criterion, value, shown_ids or []), None
                else:
                    clean, score = _clean_value(criterion, value, content)
            except (ValueError, TypeError) as exc:
                errors[name] = f"{_where(response)}{criterion['name']}: {exc}"
                continue
            if criterion["reasoning"] == "required" and not reasoning:
                errors[f"{name}__reasoning"] = _where(response) + _("%(criterion)s: write your reasoning") % {"criterion": criterion["name"]}
                continue
            rows.append(RatingRow(response, criterion["key"], clean, score, reasoning))
    for response, block, _content in per_response:
        for key in block:
            if step_questions.STEP_SEPARATOR in key and (response, key) not in steps_asked:
                errors.setdefault(field_name(response, key),
                                  f"Response {response}: no step {step_questions.split_key(key)[1]!r} is asked about")
    if errors:
        raise AnswerError(errors)
    return rows


def _questions(criterion: dict, places: list, kinds: list[str]):
    """(response, answers block, content, question) for each question a criterion asks: itself, or on a
    trajectory response one per-step copy per matching step (annotation.step_questions)."""
    for response, block, content in places:
        asked = [criterion] if response is None else step_questions.asked(criterion, content, kinds[response - 1])
        for question in asked:
            text = step_questions.text_of(content, question["step"]) if "step" in question else content
            yield response, block, text, question


def _not_asked(rubric: dict, answers: dict, n_responses: int) -> dict[str, str]:
    """Errors for whatever the answers carry that the rubric does not ask for: a response number
    not shown, an unknown criterion (or one asked at the other level), reasoning where none is
    asked, a comment where comments are off, an ignore reason where ignoring is off. Refused by
    name rather than dropped: a client that sends them has misunderstood the rubric."""
    errors: dict[str, str] = {}
    options = rubric["item_options"]
    by_key = {c["key"]: c for c in rubric["criteria"]}
    unknown = [k for k in answers["responses"]
               if not (k.isascii() and k.isdigit() and len(k) <= 6 and 1 <= int(k) <= n_responses)]
    if unknown:
        errors["answers"] = f"unknown response number(s): {', '.join(sorted(unknown))} (responses are 1 to {n_responses})"
    places = [(None, answers["item"], "item")] + [(int(k), block, "output") for k, block in answers["responses"].items()
                                                  if k not in unknown]
    for response, block, target in places:
        where = f"Response {response}: " if response is not None else ""
        for key, entry in block.items():
            name = field_name(response, key)
            base, step = step_questions.split_key(key)
            criterion = by_key.get(base)
            if criterion is None:
                errors[name] = f"{where}this rubric has no criterion {base!r}"
            elif bool(step) != (step_kinds(criterion) is not None):
                errors[name] = (f"{where}{criterion['name']} is asked per step (answer {base}@<step>)" if not step
                                else f"{where}{criterion['name']} is asked once per response, not per step")
            elif criterion["target"] != target:
                errors[name] = (f"{criterion['name']} is asked once for the whole item, not per response"
                                if criterion["target"] == "item"
                                else f"{criterion['name']} is asked for each response, not for the whole item")
            elif criterion["reasoning"] == "none" and (entry.get("reasoning") or "").strip():
                errors[f"{name}__reasoning"] = f"{where}{criterion['name']} asks for no reasoning"
    if answers["comment"] and not options.get("comment"):
        errors["comment"] = "this study takes no comments"
    if answers["ignore_reason"] and not options.get("allow_ignore"):
        errors["ignore_reason"] = "this study does not allow ignoring an item"
    return errors


def attention_passed(rubric: dict, gold: dict, rows: list[RatingRow], permutation: list[int],
                     system_of: dict[int, str] | None = None) -> bool:
    """Whether a rater's answers match an attention item's gold answers.

    gold maps a criterion key to one value (every response must get it, or the item-level answer)
    or to {"<output position>": value} for per-response gold (positions as uploaded, 0-based);
    for a comparative question, to system names best first (system_of: output id -> system).
    """
    kinds = {c["key"]: c for c in rubric["criteria"]}
    given = {(r.response, r.criterion): r.value for r in rows}
    shown_number = {position: n for n, position in enumerate(permutation, start=1)}
    for key, expected in gold.items():
        criterion = kinds.get(key)
        if criterion is None:
            continue
        if comparative.is_comparative(criterion):
            stored = given.get((None, key))
            if stored is None or not comparative.gold_agrees(criterion, stored, expected, system_of or {}):
                return False
            continue
        if criterion["target"] == "item":
            checks = [(None, expected)]
        elif isinstance(expected, dict):
            checks = [(shown_number.get(int(pos)), val) for pos, val in expected.items()]
        else:
            checks = [(n, expected) for n in range(1, len(permutation) + 1)]
        for response, want in checks:
            if str(given.get((response, key))) != str(want):
                return False
    return True


# ---------------------------------------------------------------- services


def _time_on_task(current: int, reported: int | None) -> int:
    # The client reports the total it has counted (it starts from the stored value), so take the
    # larger: a stale tab or a retried request cannot lower it.
    if reported is None:
        return current
    return max(current, min(int(reported), MAX_TIME_ON_TASK_MS))


def _reclaim(a: Assignment) -> None:
    """An expired assignment back to its rater for a late draft or submit, unless pausing released it (a
    paused rater gets no work, not even back) or its slot went to someone else; the row is locked."""
    if a.status != Assignment.Status.EXPIRED:
        return
    if StudyMember.objects.filter(study_id=a.study_id, user_id=a.rater_id, paused=True).exists():
        raise SubmitError(_(PAUSED_RELEASED))
    if not assignment_reclaim(assignment=a):
        raise SubmitError(_("This item was given to another rater after a long pause."))


def assignment_save_draft(*, assignment: Assignment, answers: dict, time_on_task_ms: int | None = None) -> Assignment:
    """Store the form as it is (no validation: a draft may be incomplete) and extend the lease.
    Drafts of submitted assignments (a revision in progress) are kept too."""
    answers = answers_normalise(answers)
    if (size := len(json.dumps(answers).encode())) > limit("assignment.draft"):
        raise AnswerError({"answers": f"draft: at most {limit('assignment.draft'):,} bytes of answers "
                                      f"(this has {size:,})"})
    with transaction.atomic():
        a = _locked(assignment)
        _reclaim(a)
        if a.status == Assignment.Status.SUBMITTED and assignment.item.is_training:
            raise SubmitError(_(TRAINING_ANSWERED))
        a.draft = answers
        a.time_on_task_ms = _time_on_task(a.time_on_task_ms, time_on_task_ms)
        fields = ["draft", "time_on_task_ms"]
        if a.status == Assignment.Status.ACTIVE:
            a.expires_at = timezone.now() + lease_duration(assignment.study)
            fields.append("expires_at")
        a.save(update_fields=fields)
    return a


def _locked(assignment: Assignment) -> Assignment:
    """Lock the assignment row and re-read what a concurrent submit or the expiry sweep may have
    changed since the caller loaded it (the rest never changes after creation)."""
    with prepared_cursor() as cursor:
        cursor.execute(f"SELECT status, slot, submitted_at, time_on_task_ms, expires_at FROM {Assignment._meta.db_table}"
                       " WHERE id = %s FOR UPDATE", [assignment.pk])
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist(assignment.pk)
    a = assignment
    a.status, a.slot, a.submitted_at, a.time_on_task_ms, a.expires_at = row
    return a


def assignment_submit(*, assignment: Assignment, answers: dict, time_on_task_ms: int | None = 0) -> Assignment:
    """Validate and store the ratings of one assignment. Idempotent: a repeated submit (double
    click, retry) stores the same single row per (response, criterion); a later submit while the
    study is open replaces the values (a revision). Raises AnswerError or SubmitError.

    The assignment's study (with its rubric version), item and outputs are used as loaded by the
    caller when they are (the views load them once); the assignment row itself is re-read under a
    row lock, so concurrent submits of one assignment apply one after the other.
    The returned assignment carries `ratings_stored`, the number of rating rows it now has.
    """
    answers = answers_normalise(answers)
    study, item = assignment.study, assignment.item
    rubric = study.rubric_version.definition
    outputs = {o.position: o for o in item.outputs.all()}
    if (done := _submit_first(assignment, rubric, answers, outputs, time_on_task_ms)) is not None:
        return done
    with transaction.atomic():
        a = _locked(assignment)
        if study.status != Study.Status.OPEN:
            raise SubmitError(_("This study is closed; ratings can no longer change."))
        was_submitted = a.status == Assignment.Status.SUBMITTED
        _reclaim(a)
        if was_submitted and item.is_training:
            # Its grade is in the rater's training attempt and its feedback was shown: a change would
            # make the two disagree. The same answers again (a retried request) are a no-op.
            if Assignment.objects.filter(pk=a.pk).values_list("draft", flat=True).get() != answers:
                raise SubmitError(_(TRAINING_ANSWERED))
            a.study, a.item = study, item
            a.ratings_stored = Rating.objects.filter(assignment=a).count()
            return a
        shown = [outputs[p] for p in a.permutation]
        rows = answers_check(rubric, answers, [o.content for o in shown], item.context, [o.pk for o in shown],
                             [o.kind for o in shown])
        _write_ratings(a, rows, shown, replace=was_submitted)
        a.status = Assignment.Status.SUBMITTED
        a.submitted_at = a.submitted_at or timezone.now()
        a.draft = answers  # the form as submitted, so a revision starts from it
        a.ignored, a.ignore_reason = answers["ignored"], answers["ignore_reason"] if answers["ignored"] else ""
        a.comment = answers["comment"] if rubric["item_options"].get("comment") else ""
        a.time_on_task_ms = _time_on_task(a.time_on_task_ms, time_on_task_ms)
        a.expires_at = None
        if a.is_attention_check:
            systems = {o.pk: o.system for o in shown}
            a.attention_passed = (not answers["ignored"]) and attention_passed(rubric, item.gold, rows, a.permutation,
                                                                                 systems)
        _save_submitted(a)
        if item.is_training:
            training_record(assignment=a)  # training answers are taught, not held against the rater
        elif a.is_attention_check and a.attention_passed is False and study.attention_fail_pause:
            _pause_if_failing(study, a.rater_id)
    a.study, a.item = study, item
    a.ratings_stored = len(rows)
    routing_refresh_request(study.pk)
    if not a.is_attention_check:
        adaptive_after_submit(study=study, item_id=item.pk)  # adaptive redundancy: another rater or not
        active_after_submit(study=study)  # active inference: the round's last rating asks for the next round
    return a



def _upsert_sql(where: str = "") -> str:
    return f"""
    INSERT INTO {Rating._meta.db_table} AS r (assignment_id, output_id, criterion, value, score, reasoning,
                                              created_at, updated_at)
    SELECT %(assignment)s, (u->>0)::bigint, u->>1, u->2, (u->>3)::float8, u->>4, %(now)s, %(now)s
    FROM jsonb_array_elements(%(rows)s::jsonb) AS u {where}
    ON CONFLICT (assignment_id, output_id, criterion)
        DO UPDATE SET value = EXCLUDED.value, score = EXCLUDED.score, reasoning = EXCLUDED.reasoning,
                      updated_at = EXCLUDED.updated_at
"""


_UPSERT_SQL = _upsert_sql()


_SUBMITTED_SQL = f"""
    UPDATE {Assignment._meta.db_table} SET status = %(status)s, submitted_at = %(submitted_at)s,
        draft = %(draft)s::jsonb, ignored = %(ignored)s, ignore_reason = %(ignore_reason)s, comment = %(comment)s,
        time_on_task_ms = %(time_on_task_ms)s, expires_at = NULL, attention_passed = %(attention_passed)s
    WHERE id = %(id)s
"""


# The first submit of an active regular item, as one statement: the assignment row is updated (and
# so locked) only while it is still active, and the ratings are written only if it was. Run alone it
# is its own transaction (no BEGIN, lock, COMMIT round trips). A concurrent submit of the same
# assignment waits for the row, then finds it submitted and updates nothing; the expiry sweep skips
# the locked row or, having committed first, leaves it expired: either way no row comes back and
# the submit takes the general path.
_FIRST_SUBMIT_SQL = f"""
    WITH done AS (
        UPDATE {Assignment._meta.db_table} SET status = 'submitted', submitted_at = COALESCE(submitted_at, %(now)s),
            draft = %(draft)s::jsonb, ignored = %(ignored)s, ignore_reason = %(ignore_reason)s, comment = %(comment)s,
            time_on_task_ms = GREATEST(time_on_task_ms, %(time_on_task_ms)s::bigint), expires_at = NULL
        WHERE id = %(assignment)s AND status = 'active'
        RETURNING slot, submitted_at, time_on_task_ms
    ), rated AS (
        {_upsert_sql("WHERE EXISTS (SELECT 1 FROM done)")}
    )
    SELECT slot, submitted_at, time_on_task_ms FROM done
"""


def _submit_first(assignment: Assignment, rubric: dict, answers: dict, outputs: dict[int, Output],
                  time_on_task_ms: int | None) -> Assignment | None:
    """The common submit (an active assignment of a regular item in an open study, answers valid) in
    one statement; None when it is not that case, and the caller takes the general path, which
    decides and words every refusal as before."""
    study, item, a = assignment.study, assignment.item, assignment
    if study.status != Study.Status.OPEN or item.is_training or a.is_attention_check or a.status != Assignment.Status.ACTIVE:
        return None
    shown = [outputs[p] for p in a.permutation]
    try:
        rows = answers_check(rubric, answers, [o.content for o in shown], item.context, [o.pk for o in shown],
                             [o.kind for o in shown])
    except AnswerError:
        return None
    ignored = answers["ignored"]
    fields = {"draft": answers, "ignored": ignored, "ignore_reason": answers["ignore_reason"] if ignored else "",
              "comment": answers["comment"] if rubric["item_options"].get("comment") else ""}
    reported = _time_on_task(0, time_on_task_ms)
    with prepared_cursor() as cursor:
        cursor.execute(_FIRST_SUBMIT_SQL, {**_rating_params(a, rows, shown), **fields, "draft": json.dumps(answers),
                                           "time_on_task_ms": reported})
        row = cursor.fetchone()
    if row is None:
        return None
    for name, value in fields.items():
        setattr(a, name, value)
    a.slot, a.submitted_at, a.time_on_task_ms = row
    a.status, a.expires_at = Assignment.Status.SUBMITTED, None
    a.ratings_stored = len(rows)
    routing_refresh_request(study.pk)
    adaptive_after_submit(study=study, item_id=item.pk)
    active_after_submit(study=study)
    return a


def _save_submitted(a: Assignment) -> None:
    """Write what a submit changes on the assignment row. A plain statement: the ORM's save() cost
    more CPU than the database spent on it, on every submit (no signal listens to assignments)."""
    with prepared_cursor() as cursor:
        cursor.execute(_SUBMITTED_SQL, {
            "status": a.status, "submitted_at": a.submitted_at, "draft": json.dumps(a.draft), "ignored": a.ignored,
            "ignore_reason": a.ignore_reason, "comment": a.comment, "time_on_task_ms": a.time_on_task_ms,
            "attention_passed": a.attention_passed, "id": a.pk})


def _rating_params(a: Assignment, rows: list[RatingRow], shown: list[Output]) -> dict:
    """_UPSERT_SQL's parameters: the rows as one JSON array of [output, criterion, value, score,
    reasoning] (one dump in C; five arrays cost psycopg more CPU to adapt, element by element, than
    the database spent on the insert). A score is finite and JSON carries a float as its shortest
    repr, which float8 reads back as the same double."""
    return {"assignment": a.pk, "now": timezone.now(),
            "rows": json.dumps([[o, r.criterion, r.value, r.score, r.reasoning]
                                for o, r in zip(_output_ids(rows, shown), rows)], allow_nan=False)}


def _output_ids(rows: list[RatingRow], shown: list[Output]) -> list[int | None]:
    """Each row's output id (None for an item-level criterion)."""
    return [shown[r.response - 1].pk if r.response is not None else None for r in rows]


def _write_ratings(a: Assignment, rows: list[RatingRow], shown: list[Output], *, replace: bool) -> None:
    """Upsert the rows; when replacing an earlier submit, drop the answers it had and this one lacks.

    One hand-written statement rather than bulk_create: this runs on every submit, and building the
    ORM's upsert cost more CPU than the database spent on it.
    """
    params = _rating_params(a, rows, shown)
    output_ids = _output_ids(rows, shown)
    if rows:
        # ON CONFLICT DO UPDATE on (assignment, output, criterion), nulls not distinct: a retry or a
        # revision never adds a second row.
        with prepared_cursor() as cursor:
            cursor.execute(_UPSERT_SQL, params)
    if not replace:
        return  # a first submit: nothing earlier to drop
    keep = Q()
    for output_id, r in zip(output_ids, rows):
        keep |= Q(output_id=output_id, criterion=r.criterion)
    stale = Rating.objects.filter(assignment=a)
    if rows:
        stale = stale.exclude(keep)
    stale.delete()  # answers cleared in a revision (an optional highlight removed, an item ignored)


def _pause_if_failing(study: Study, rater_id: int) -> None:
    failed = Assignment.objects.filter(study=study, rater_id=rater_id, attention_passed=False,
                                       item__is_training=False).count()
    if failed >= study.attention_fail_pause:
        StudyMember.objects.filter(study=study, user_id=rater_id).update(paused=True)
