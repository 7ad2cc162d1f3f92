"""Per-step questions: a rubric criterion with `scope: assistant_turns | steps` asked once for each
matching step of a trajectory output (docs/rubric-format.md "Per-step questions").

Each question is the criterion with key `<key>@<step key>` and a name saying which step, so the
workspace form, drafts, submits and stored ratings treat it as one more criterion of that response.

    asked(criterion, content, kind) -> [criterion or its per-step copies]
    split_key("call_needed@m2.t0") -> ("call_needed", "m2.t0")
    text_of(content, "m5") -> the step's text that a per-step highlight's offsets index

A `spans` criterion (highlights) on a trajectory is asked per step only, and only of steps that have
text (a turn that only calls tools has none): offsets into the trajectory's JSON would mean nothing.
"""

from __future__ import annotations

from functools import lru_cache

from django.utils.translation import gettext as _

from annotation import trajectory
from rubrics.schema import step_kinds

STEP_SEPARATOR = "@"

_KIND_LABELS = {"system": "System", "user": "User", "assistant": "Assistant", "tool_call": "Tool call",
                "tool_result": "Tool result"}


@lru_cache(maxsize=256)
def _steps(content: str) -> tuple[tuple[str, str, int, str, str], ...]:
    """(key, kind, number shown, tool name, text) of each step of stored trajectory content."""
    try:
        data = trajectory.parse(content)
    except trajectory.TrajectoryError:
        return ()
    return tuple((s.key, s.kind, n, s.call["function"]["name"] if s.call else "", trajectory.step_text(s))
                 for n, s in enumerate(trajectory.steps(data), start=1))


def text_of(content: str, step: str) -> str:
    """The text of one step (trajectory.step_text); "" for a step the content does not have."""
    return next((text for key, _kind, _n, _tool, text in _steps(content) if key == step), "")


def split_key(key: str) -> tuple[str, str]:
    """A stored rating's criterion -> (criterion key, step key); the step is "" for a whole-output rating."""
    base, _sep, step = key.partition(STEP_SEPARATOR)
    return base, step


def step_label(kind: str, number: int, tool: str = "") -> str:
    label = _("Step %(n)s · %(kind)s") % {"n": number, "kind": _(_KIND_LABELS.get(kind, kind))}
    return f"{label} {tool}" if tool else label


def asked(criterion: dict, content: str, kind: str) -> list[dict]:
    """The questions a criterion asks of one response: itself, or one copy per matching step
    (none when the response is not a trajectory)."""
    kinds = step_kinds(criterion)
    spans = criterion["kind"] == "spans"
    if kinds is None:
        return [] if spans and kind == "trajectory" else [criterion]
    if kind != "trajectory":
        return []
    return [{**criterion, "key": f"{criterion['key']}{STEP_SEPARATOR}{key}", "step": key, "step_kind": step_kind,
             "name": f"{step_label(step_kind, number, tool)}: {criterion['name']}"}
            for key, step_kind, number, tool, text in _steps(content) if step_kind in kinds and (text or not spans)]


def step_info(content: str, kind: str) -> dict[str, dict]:
    """step key -> {"kind", "number", "tool", "tool_call_id", "span_id"} for exports and reports."""
    if kind != "trajectory":
        return {}
    try:
        data = trajectory.parse(content)
    except trajectory.TrajectoryError:
        return {}
    return {s.key: {"kind": s.kind, "number": n, "tool": s.call["function"]["name"] if s.call else "",
                    "tool_call_id": s.call["id"] if s.call else s.message.get("tool_call_id", ""),
                    "span_id": s.span_id, "trace_id": data.get("trace_id", "")}
            for n, s in enumerate(trajectory.steps(data), start=1)}
