"""Build judge prompts from a rubric dict, an item and one of its outputs.

Dispatch on `rubric["judge"]["style"]`; `overrides` replaces named template pieces
(string.Template, $name placeholders) per judge.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.prompts import aqua_003, best_worst, feedback_000, fulltext_004, generic, pairwise, ranking
from judges.prompts.base import LABEL_KINDS, Prompt, UnknownOverride, check_overrides, judgeable, known_overrides

__all__ = ["Prompt", "UnknownOverride", "check_overrides", "known_overrides", "build_all_criteria", "build_criterion", "build_label", "build_pairwise",
           "build_ranking", "build_best_worst",
           "build_subjudge", "criterion_by_key", "style_of"]


def style_of(rubric: Mapping[str, Any]) -> str:
    return (rubric.get("judge") or {}).get("style") or "generic"


def check_rubric_overrides(rubric: Mapping[str, Any], overrides: Mapping[str, str] | None) -> None:
    """An override this rubric's prompts never use is an error naming the ones they do."""
    check_overrides(overrides, style_of(rubric))


def criterion_by_key(rubric: Mapping[str, Any], key: str) -> dict:
    for c in rubric.get("criteria", []):
        if c["key"] == key:
            return c
    raise KeyError(f"rubric {rubric.get('slug')} has no criterion {key!r}")


def build_all_criteria(rubric: Mapping[str, Any], item: Mapping[str, Any], output: Mapping[str, Any] | int,
                       overrides: Mapping[str, str] | None = None) -> Prompt:
    check_rubric_overrides(rubric, overrides)
    if style_of(rubric) == "feedback_000":
        return feedback_000.build(rubric, item, output, overrides)
    return generic.build_all(rubric, item, output, overrides)


def build_criterion(rubric: Mapping[str, Any], key: str, item: Mapping[str, Any], output: Mapping[str, Any] | int,
                    overrides: Mapping[str, str] | None = None, output_format: str | None = None) -> Prompt:
    check_rubric_overrides(rubric, overrides)
    c = criterion_by_key(rubric, key)
    if style_of(rubric) == "fulltext_004" and c.get("kind") not in LABEL_KINDS:
        return fulltext_004.build(rubric, c, item, output, overrides, output_format)
    if style_of(rubric) == "aqua_003" and c.get("kind") in LABEL_KINDS:
        return aqua_003.build_label(rubric, c, item, output, overrides)
    return generic.build_one(rubric, c, item, output, overrides, output_format)


def build_label(rubric: Mapping[str, Any], item: Mapping[str, Any], output: Mapping[str, Any] | int,
                key: str | None = None, overrides: Mapping[str, str] | None = None) -> Prompt:
    if key is None:
        labels = [c for c in judgeable(rubric) if c.get("kind") in LABEL_KINDS]
        if not labels:  # seed 003's taxonomy is the default label set
            return aqua_003.build_label(rubric, None, item, output, overrides)
        key = labels[0]["key"]
    return build_criterion(rubric, key, item, output, overrides)


def build_subjudge(kind: str, item: Mapping[str, Any], output: Mapping[str, Any] | int,
                   overrides: Mapping[str, str] | None = None) -> Prompt:
    return aqua_003.build_subjudge(kind, item, output, overrides)


def build_pairwise(rubric: Mapping[str, Any], item: Mapping[str, Any], output_a: Mapping[str, Any] | int,
                   output_b: Mapping[str, Any] | int, key: str | None = None,
                   overrides: Mapping[str, str] | None = None) -> Prompt:
    check_rubric_overrides(rubric, overrides)
    c = criterion_by_key(rubric, key) if key else None
    return pairwise.build(rubric, c, item, output_a, output_b, overrides)


def build_ranking(rubric: Mapping[str, Any], item: Mapping[str, Any], shown: Sequence[int], key: str | None = None,
                  overrides: Mapping[str, str] | None = None) -> Prompt:
    """Rank the outputs `shown` (indexes, in the order shown) on criterion `key`, or overall."""
    check_rubric_overrides(rubric, overrides)
    c = criterion_by_key(rubric, key) if key else None
    return ranking.build(rubric, c, item, shown, overrides)


def build_best_worst(rubric: Mapping[str, Any], item: Mapping[str, Any], shown: Sequence[int],
                     key: str | None = None, overrides: Mapping[str, str] | None = None) -> Prompt:
    """Pick the best and the worst of the outputs `shown` on criterion `key`, or overall."""
    check_rubric_overrides(rubric, overrides)
    c = criterion_by_key(rubric, key) if key else None
    return best_worst.build(rubric, c, item, shown, overrides)
