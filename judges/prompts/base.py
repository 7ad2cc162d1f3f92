"""Prompt shape and helpers shared by the seed-specific builders.

Every builder puts the text shared by all items (role, rubric, criteria, examples, output
format) FIRST and the item's own text LAST, in a single user message, so a server's prefix
cache serves the shared part (and chat templates without a system role still work).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Mapping

SCORED_KINDS = ("likert", "numeric")  # "confidence" is a rater's self-report: judges do not score it
LABEL_KINDS = ("choice", "binary")
JUDGEABLE_KINDS = SCORED_KINDS + LABEL_KINDS
COMPARATIVE_KINDS = ("pairwise", "ranking", "best_worst")  # item-level: compared, never scored per output


@dataclass(frozen=True)
class Prompt:
    messages: tuple[dict[str, str], ...]
    shared_prefix: str  # item-independent text the user message starts with
    expects: str  # first_line | json_score | criteria_block | json_scores | label | pairwise | ranking | best_worst | json_fields
    criterion: str | None = None  # set for one-criterion prompts

    @property
    def text(self) -> str:
        return self.messages[-1]["content"]


def make_prompt(shared: str, item_text: str, expects: str, criterion: str | None = None,
                system: str | None = None) -> Prompt:
    shared = shared.rstrip() + "\n\n"
    msgs: list[dict[str, str]] = []
    if system:
        msgs.append({"role": "system", "content": system})
    msgs.append({"role": "user", "content": shared + item_text.strip() + "\n"})
    return Prompt(tuple(msgs), shared, expects, criterion)


def render(template: str, **values: Any) -> str:
    """Fill `$name`, `${name}` (string.Template) and `{name}` (str.format style) placeholders.

    One pass over the template: only the given names are replaced, so other braces (JSON
    answer templates, code in an output) and unknown placeholders stay as written, and text
    inserted for one placeholder is never scanned again.
    """
    vals = {k: "" if v is None else str(v) for k, v in values.items()}
    if not vals:
        return template
    return _placeholders(tuple(sorted(vals))).sub(lambda m: vals[m.group(1) or m.group(2) or m.group(3)], template)


@functools.lru_cache(maxsize=256)
def _placeholders(names: tuple[str, ...]) -> re.Pattern:
    alts = "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True))
    return re.compile(rf"\$\{{({alts})\}}|\$({alts})(?![A-Za-z0-9_])|\{{({alts})\}}")


def split_at(template: str, marker: str) -> tuple[str, str]:
    """(shared part, item part) of a template, split at the start of the line holding `marker`."""
    idx = template.find(marker)
    if idx < 0:
        return template, ""
    line_start = template.rfind("\n", 0, idx) + 1
    return template[:line_start], template[line_start:]


# The template pieces a judge's `prompt_overrides` may replace, by rubric style. Every rubric
# can also use the generic pieces (criteria no style-specific builder handles) and the
# comparative ones (pairwise, ranking, best_worst).
OVERRIDE_KEYS: dict[str, tuple[str, ...]] = {
    "generic": ("role", "item", "answer", "answer_first_line", "answer_json", "answer_label"),
    "pairwise": ("pair_role", "pair_item", "verdict"),
    "ranking": ("rank_role", "rank_verdict", "compare_item"),
    "best_worst": ("bw_role", "bw_verdict", "compare_item"),
    "feedback_000": ("base_prompt", "output_format"),
    "fulltext_004": ("base_prompt", "json_prompt", "example"),
    "aqua_003": ("label_header", "legacy_header", "combined_answer", "route_header", "route_line", "item",
                 "subjudge_meaning", "subjudge_reward", "subjudge_pair"),
}


class UnknownOverride(ValueError):
    pass


def known_overrides(style: str | None = None) -> list[str]:
    """Override keys a rubric of `style` accepts; every style's keys when `style` is None."""
    styles = OVERRIDE_KEYS if style is None else ("generic", "pairwise", "ranking", "best_worst", style)
    return sorted({k for st in styles for k in OVERRIDE_KEYS.get(st, ())})


def check_overrides(overrides: Mapping[str, str] | None, style: str | None = None) -> None:
    """Raise UnknownOverride naming the known keys when an override names no template piece."""
    unknown = sorted(set(overrides or {}) - set(known_overrides(style)))
    if unknown:
        where = f" for a {style} rubric" if style else ""
        raise UnknownOverride(f"unknown prompt override {', '.join(map(repr, unknown))}{where}; "
                              f"known: {', '.join(known_overrides(style))}")


def template(overrides: Mapping[str, str] | None, name: str, default: str) -> str:
    """A judge may override any named template piece; a misspelt name is an error, never ignored."""
    if overrides:
        check_overrides(overrides)
    return (overrides or {}).get(name, default)


def judgeable(rubric: Mapping[str, Any], target: str = "output") -> list[dict]:
    return [c for c in rubric.get("criteria", []) if c.get("kind") in JUDGEABLE_KINDS
            and c.get("target", "output") == target]


def bounds(criterion: Mapping[str, Any]) -> tuple[int, int]:
    lo, hi = criterion.get("min"), criterion.get("max")
    if lo is None or hi is None:
        if criterion.get("kind") == "confidence":
            return 1, 5
        raise ValueError(f"criterion {criterion.get('key')} has no min/max")
    return int(lo), int(hi)


def choice_values(criterion: Mapping[str, Any]) -> list[str]:
    return [str(c["value"]) for c in criterion.get("choices") or []]


def levels_text(criterion: Mapping[str, Any], fmt: str = "- {value} ({label}): {description}") -> str:
    rows = []
    for lv in sorted(criterion.get("levels") or [], key=lambda x: -float(x["value"])):
        rows.append(fmt.format(value=lv["value"], label=lv.get("label") or lv["value"],
                               description=(lv.get("description") or "").strip()).rstrip(": "))
    return "\n".join(rows)


def choices_text(criterion: Mapping[str, Any]) -> str:
    return "\n".join(f"- {c['value']}: {(c.get('description') or c.get('label') or '').strip()}"
                     for c in criterion.get("choices") or [])


def output_of(item: Mapping[str, Any], output: Mapping[str, Any] | int) -> Mapping[str, Any]:
    return item["outputs"][output] if isinstance(output, int) else output


def metadata(item: Mapping[str, Any]) -> Mapping[str, Any]:
    return item.get("metadata") or {}
