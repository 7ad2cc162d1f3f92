"""Seed 003 (AQUA): label one grammatical-error-correction edit TP/FP3/FP2/FP1, strict JSON.

Also the modular sub-judges (meaning change 0..4, reward -3..+3, pair correctness) and the
word-level alignment that renders an edit as `{source=>target}` (the "Aligned" field).
The item's context is the source sentence, the output the corrected sentence; metadata
may carry precomputed `aligned`, `edit` and `lang`.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Mapping

from judges.prompts.base import Prompt, choices_text, make_prompt, metadata, output_of, render, template

DEFAULT_LABELS = [
    {"value": "TP", "description": "Edit fixes a real error; relative improvement even if other errors remain."},
    {"value": "FP3", "description": "Optional/preferential; correct→correct or style-only."},
    {"value": "FP2", "description": "Introduces a grammatical/punctuation error or minor meaning change."},
    {"value": "FP1", "description": "Major meaning change, high sensitivity, or nonsensical output."},
]

LABEL_HEADER = """You judge a single edit made by a grammatical error correction system. The sentence may be in any language.
Judge RELATIVE improvement: compare the sentence with and without this one edit. An edit that fixes a real error is TP even if other errors remain elsewhere in the sentence.

Labels:
$labels

Rules:
- Judge only the edit marked in Aligned as {source=>target}; ignore every other part of the sentence.
- correct→correct changes and pure style preferences are FP3, not TP.
- An edit that introduces an error, or changes the meaning slightly, is FP2; a major meaning change or nonsense is FP1.

Answer with strict JSON only, no other text: {"label": "$label_options", "reason": "<one sentence>"}"""

# Seed 003 "feedback/legacy (baseline-v0)": the early prompt, kept as its own method so it can
# be benchmarked. It asks about the corrected sentence as a whole (weak relative-improvement
# framing) and calls an unneeded edit "acceptable", which is where its FP3 bias comes from.
LEGACY_HEADER = """You are a grammar expert. A grammatical error correction system changed a sentence.
Look at the corrected sentence and decide how good the correction is.

Labels:
$labels

If the corrected sentence is fine but the change was not needed, it is acceptable (FP3).

Answer with JSON only: {"label": "$label_options", "reason": "<one sentence>"}"""

# Seed 003's optional LLM router (`router: llm`): the small judge classifies and routes in one
# call; when that answer is incomplete, the two-call fallback asks for the label (LABEL_HEADER)
# and the route (ROUTE_HEADER) separately.
ROUTE_LINE = """Also say whether a stronger judge should review this edit: "yes" when you are unsure of the label, the edit touches numbers, names or meaning, or rewrites much of the sentence; otherwise "no"."""

COMBINED_ANSWER = """Answer with strict JSON only, no other text: {"label": "<one of $label_options>", "escalate": "<one of yes|no>", "reason": "<one sentence>"}"""

ROUTE_HEADER = """You route single grammatical-error-correction edits between a small judge and stronger judges (any language).
A small judge labelled the edit below as $small_label (labels: $label_options; TP = fixes a real error, FP3 = optional or style-only, FP2 = introduces an error or slightly changes the meaning, FP1 = major meaning change or nonsense).
Should a stronger judge review it? "yes" when the small label may well be wrong, the edit touches numbers, names or meaning, or rewrites much of the sentence; otherwise "no".
Answer with strict JSON only: {"escalate": "<one of yes|no>", "reason": "<one sentence>"}"""

ITEM = """Language: $lang
Source: $source
Target: $target
Aligned: $aligned
Edit: $edit"""

SUBJUDGE_HEADERS = {
    "meaning": """You judge a single edit made by a grammatical error correction system (any language).
How much does this one edit change the MEANING of the sentence?
0 = not at all, 1 = trivially, 2 = slightly, 3 = substantially, 4 = completely or the result is nonsensical.
Answer with strict JSON only: {"meaning": <integer from 0 to 4>, "reason": "<one sentence>"}""",
    "reward": """You judge a single edit made by a grammatical error correction system (any language).
Does this one edit make the sentence better or worse? Use an integer from -3 (much worse) to +3 (much better); 0 = no difference in correctness.
Answer with strict JSON only: {"reward": <integer from -3 to 3>, "reason": "<one sentence>"}""",
    "pair": """You judge a single edit made by a grammatical error correction system (any language).
Considering only the edited span and its immediate context: is the SOURCE version grammatically correct, and is the TARGET version grammatically correct?
Answer with strict JSON only: {"source_correct": true|false, "target_correct": true|false, "reason": "<one sentence>"}""",
}


@dataclass(frozen=True)
class Span:
    source: str
    target: str


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text, re.UNICODE)


def edit_spans(source: str, target: str) -> list[Span]:
    """Word-level changed spans between source and target."""
    a, b = tokens(source), tokens(target)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            out.append(Span(" ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return out


def aligned_text(source: str, target: str) -> str:
    """The source sentence with each change written {old=>new}."""
    a, b = tokens(source), tokens(target)
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(" ".join(a[i1:i2]))
        else:
            parts.append("{" + " ".join(a[i1:i2]) + "=>" + " ".join(b[j1:j2]) + "}")
    return " ".join(p for p in parts if p)


_DIFF = re.compile(r"\[-(.*?)-\]|\{\+(.*?)\+\}", re.S)


def apply_diff(content: str, side: str) -> str:
    """Source ("old") or target ("new") text of wdiff markup `[-deleted-]{+inserted+}`."""
    def repl(m: re.Match) -> str:
        if m.group(1) is not None:
            return m.group(1) if side == "old" else ""
        return m.group(2) if side == "new" else ""
    return re.sub(r"  +", " ", _DIFF.sub(repl, content))


def source_target(item: Mapping[str, Any], output: Mapping[str, Any] | int) -> tuple[str, str]:
    """The sentence before and after the edit: metadata first, else the context and the (diff) output."""
    meta, out = metadata(item), output_of(item, output)
    content = out["content"]
    is_diff = out.get("kind") == "diff" or bool(_DIFF.search(content))
    source = meta.get("source") or (apply_diff(content, "old") if is_diff else item.get("context") or "")
    target = meta.get("target") if len(item.get("outputs") or []) <= 1 and meta.get("target") else None
    return source, target or (apply_diff(content, "new") if is_diff else content)


def edit_fields(item: Mapping[str, Any], output: Mapping[str, Any] | int) -> dict[str, str]:
    meta = metadata(item)
    source, target = source_target(item, output)
    edit = meta.get("edit")
    if isinstance(edit, Mapping):
        edit = f"{edit.get('original') or '∅'} → {edit.get('correction') or '∅'}"
    if not edit:
        edit = "; ".join(f"{s.source or '∅'} → {s.target or '∅'}" for s in edit_spans(source, target))
    return {
        "source": source,
        "target": target,
        "aligned": meta.get("aligned") or aligned_text(source, target),
        "edit": edit,
        "lang": meta.get("lang") or meta.get("language") or "unknown",
    }


def label_choices(rubric: Mapping[str, Any] | None, criterion: Mapping[str, Any] | None) -> list[dict]:
    if criterion and criterion.get("choices"):
        return list(criterion["choices"])
    return DEFAULT_LABELS


def build_label(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
                output: Mapping[str, Any] | int, overrides: Mapping[str, str] | None = None) -> Prompt:
    choices = label_choices(rubric, criterion)
    shared = render(template(overrides, "label_header", (rubric.get("judge") or {}).get("base_prompt") or LABEL_HEADER),
                    labels=choices_text({"choices": choices}),
                    label_options="|".join(str(c["value"]) for c in choices))
    item_text = render(template(overrides, "item", ITEM), **edit_fields(item, output))
    return make_prompt(shared, item_text, "label", criterion["key"] if criterion else None)


def _label_header(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, header: str) -> tuple[str, str]:
    choices = label_choices(rubric, criterion)
    options = "|".join(str(c["value"]) for c in choices)
    return render(header, labels=choices_text({"choices": choices}), label_options=options), options


def build_legacy(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
                 output: Mapping[str, Any] | int, overrides: Mapping[str, str] | None = None) -> Prompt:
    """Seed 003's legacy prompt (baseline-v0); override piece `legacy_header`."""
    shared, _ = _label_header(rubric, criterion, template(overrides, "legacy_header", LEGACY_HEADER))
    item_text = render(template(overrides, "item", ITEM), **edit_fields(item, output))
    return make_prompt(shared, item_text, "label", criterion["key"] if criterion else None)


def build_combined_route(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
                         output: Mapping[str, Any] | int, overrides: Mapping[str, str] | None = None) -> Prompt:
    """The LLM router's one call: the label prompt with its answer line replaced by label + escalate."""
    label_prompt = build_label(rubric, criterion, item, output, overrides)
    head = label_prompt.shared_prefix.rstrip()
    cut = head.rfind("\nAnswer with")
    head = (head[:cut] if cut >= 0 else head).rstrip()
    options = "|".join(str(c["value"]) for c in label_choices(rubric, criterion))
    tail = render(template(overrides, "route_line", ROUTE_LINE) + "\n\n"
                  + template(overrides, "combined_answer", COMBINED_ANSWER), label_options=options)
    item_text = render(template(overrides, "item", ITEM), **edit_fields(item, output))
    return make_prompt(head + "\n\n" + tail, item_text, "label_route", criterion["key"] if criterion else None)


def build_route(rubric: Mapping[str, Any], criterion: Mapping[str, Any] | None, item: Mapping[str, Any],
                output: Mapping[str, Any] | int, small_label: str | None,
                overrides: Mapping[str, str] | None = None) -> Prompt:
    """The two-call fallback's routing call, given the small judge's label (or none)."""
    options = "|".join(str(c["value"]) for c in label_choices(rubric, criterion))
    shared = render(template(overrides, "route_header", ROUTE_HEADER), label_options=options,
                    small_label=small_label or "(no label: its answer could not be read)")
    item_text = render(template(overrides, "item", ITEM), **edit_fields(item, output))
    return make_prompt(shared, item_text, "json_fields", "escalate")


def build_subjudge(kind: str, item: Mapping[str, Any], output: Mapping[str, Any] | int,
                   overrides: Mapping[str, str] | None = None) -> Prompt:
    shared = template(overrides, f"subjudge_{kind}", SUBJUDGE_HEADERS[kind])
    item_text = render(template(overrides, "item", ITEM), **edit_fields(item, output))
    return make_prompt(shared, item_text, "json_fields", kind)
