"""A trajectory as raters see it: one list item per step, tool calls and long results folded, errors
named in text. Pure: (stored content) -> safe HTML; blinded (no model or provider is ever written).

Each step is an <li data-step="m3"> with a roving tabindex; static/js/trajectory.js moves focus
between steps with j/k (and the arrow keys while a step has focus). Step keys are those of
annotation.trajectory.steps, so per-step questions can point at their step.
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.translation import gettext as _, ngettext

from annotation import trajectory

FOLD_CHARS = 600  # a tool result or message longer than this is folded behind its first line
FOLD_LINES = 12
_PREVIEW_CHARS = 120


def _long(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


def _preview(text: str) -> str:
    first = " ".join(text.split())[:_PREVIEW_CHARS]
    return first + ("…" if len(" ".join(text.split())) > _PREVIEW_CHARS else "")


def _meta_line(meta: dict) -> str:
    """Tokens and latency, in words; never the model or provider (blinding)."""
    parts = []
    if isinstance(meta.get("input_tokens"), (int, float)) or isinstance(meta.get("output_tokens"), (int, float)):
        parts.append(_("%(i)s in / %(o)s out tokens") % {"i": meta.get("input_tokens", "–"),
                                                         "o": meta.get("output_tokens", "–")})
    if isinstance(meta.get("latency_ms"), (int, float)):
        parts.append(_("%(ms)s ms") % {"ms": f"{meta['latency_ms']:g}"})
    return f'<span class="step-meta">{escape(" · ".join(parts))}</span>' if parts else ""


def _error(meta: dict) -> str:
    if not meta.get("error"):
        return ""
    # A word and a symbol, not colour alone, mark a failed step.
    return (f'<p class="step-error"><strong>⚠ {escape(_("Error:"))}</strong> '
            f'<span dir="auto">{escape(meta["error"])}</span></p>')


def _text_block(text: str, *, summary: str, css: str = "turn-text", span_root: bool = False) -> str:
    shown, is_json = trajectory.shown_text(text)
    root = " data-span-root" if span_root else ""
    body = (f'<pre class="traj-json" tabindex="0"{root}>{escape(shown)}</pre>' if is_json
            else f'<div class="{css}" dir="auto"{root}>{escape(text)}</div>')
    if not _long(text):
        return body
    return (f'<details class="traj-fold"><summary>{escape(summary)} '
            f'<span class="muted">({escape(_preview(text))})</span></summary>{body}</details>')


def _call_html(step: trajectory.Step, result: dict | None, number: int, span_root: bool) -> str:
    call = step.call
    name = call["function"]["name"]
    args, _is_json = trajectory.shown_text(call["function"]["arguments"])
    meta = call.get("meta") or {}
    failed = bool(meta.get("error") or (result and (result.get("meta") or {}).get("error")))
    status = (f' <span class="step-badge step-badge-error">⚠ {escape(_("failed"))}</span>' if failed else "")
    if result is None:
        status += f' <span class="step-badge">{escape(_("no result"))}</span>'
    label = _("Tool call %(name)s, step %(n)s") % {"n": number, "name": name}
    return (f'<li class="step step-tool_call{" step-failed" if failed else ""}" data-step="{step.key}" tabindex="-1" '
            f'aria-label="{escape(label)}">'
            f'<details class="tool-call"><summary><span class="turn-role">{escape(_("Tool call"))}</span> '
            f'<code>{escape(name)}</code>{status}</summary>'
            f'<div class="traj-label">{escape(_("Arguments"))}</div>'
            f'<pre class="traj-json" tabindex="0"{" data-span-root" if span_root else ""}>{escape(args)}</pre>'
            f'{_error(meta)}{_meta_line(meta)}</details></li>')


_ROLE_LABELS = {"system": "System", "developer": "System", "user": "User", "assistant": "Assistant",
                "tool": "Tool result"}


def trajectory_html(content: str, *, label: str = "Trajectory", span_root: bool = False) -> str:
    """The HTML of stored trajectory content; content that does not parse is shown as text. With
    span_root, each step's text (trajectory.step_text) is marked `data-span-root`, the element whose
    text per-step highlights index."""
    try:
        data = trajectory.parse(content)
    except trajectory.TrajectoryError:
        return f'<div class="content-text" dir="auto">{escape(content)}</div>'
    calls = {s.call["id"]: s for s in trajectory.steps(data) if s.kind == "tool_call"}
    results = trajectory.results_by_call(data)
    rows: list[str] = []
    number = 0
    for step in trajectory.steps(data):
        number += 1
        if step.kind == "tool_call":
            rows.append(_call_html(step, results.get(step.call["id"]), number, span_root))
            continue
        message, meta = step.message, step.message.get("meta") or {}
        role = _(_ROLE_LABELS[message["role"]])
        if message["role"] == "tool":
            call = calls.get(message["tool_call_id"])
            role = _("Result of %(name)s") % {"name": call.call["function"]["name"]} if call else role
        failed = " step-failed" if meta.get("error") else ""
        parts = [f'<div class="step-head"><span class="turn-role">{escape(role)}</span>'
                 f'<span class="step-number">{escape(_("step %(n)s") % {"n": number})}</span>'
                 f'{_meta_line(meta)}</div>']
        if message.get("reasoning"):
            parts.append(f'<details class="reasoning"><summary>{escape(_("Reasoning summary"))}</summary>'
                         f'<div class="turn-text" dir="auto">{escape(message["reasoning"])}</div></details>')
        if message.get("content"):
            fold = _("Tool result") if message["role"] == "tool" else _("Long message")
            parts.append(_text_block(message["content"], summary=fold, span_root=span_root))
        if message.get("refusal"):
            parts.append(f'<p class="step-refusal"><strong>{escape(_("Refused:"))}</strong> '
                         f'<span dir="auto">{escape(message["refusal"])}</span></p>')
        parts.append(_error(meta))
        rows.append(f'<li class="step step-{step.kind}{failed}" data-step="{step.key}" tabindex="-1" '
                    f'aria-label="{escape(role)}, {escape(_("step %(n)s") % {"n": number})}">{"".join(parts)}</li>')
    if rows:
        rows[0] = rows[0].replace('tabindex="-1"', 'tabindex="0"', 1)  # roving tabindex: one stop in the tab order
    n = len(rows)
    hint = ngettext("%(n)s step. Keys j and k move between steps.", "%(n)s steps. Keys j and k move between steps.",
                    n) % {"n": n}
    return (f'<div class="trajectory" data-trajectory><p class="traj-hint muted">{escape(hint)}</p>'
            f'<ol class="traj-steps" aria-label="{escape(label)}">{"".join(rows)}</ol></div>')
