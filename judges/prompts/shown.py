"""What the comparative prompts (ranking, best-worst) share: K outputs shown as "Response 1".."Response K"
in a given order (never by system name), and the criterion they are compared on."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges.prompts.base import output_of, render, template
from judges.prompts.generic import criterion_text

ITEM = """## Input
$context

$responses"""


def compared_on(criterion: Mapping[str, Any] | None, overall: str) -> str:
    """The criterion's text, or the overall-quality question when the judge compares on no criterion."""
    return criterion_text(criterion) if criterion else f"### Overall quality\n{overall}"


def shown_text(item: Mapping[str, Any], shown: Sequence[int], overrides: Mapping[str, str] | None) -> str:
    """The item's input and its outputs `shown` (indexes, in the order shown), numbered from 1."""
    if len(set(shown)) != len(shown) or any(not 0 <= i < len(item.get("outputs") or []) for i in shown):
        raise ValueError(f"shown outputs {list(shown)} are not distinct outputs of item {item.get('id')}")
    responses = "\n\n".join(f"## Response {n}\n{output_of(item, i)['content']}" for n, i in enumerate(shown, 1))
    return render(template(overrides, "compare_item", ITEM), context=item.get("context") or "", responses=responses)
