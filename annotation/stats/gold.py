"""Gold answers matched with given answers: the one rule behind the report's gold accuracy of the
raters and the gold page's scores of the judges (judges.services.gold).

An item's gold for a criterion is one value (the item's answer for an item-level criterion, or the
answer every output must get), a list with one value per output position, or {"<position>": value}
for some outputs only (attention items). Values are compared as the text PostgreSQL's `#>> '{}'`
gives a JSON scalar (true, 3, ACCEPT), and as numbers for a numeric criterion (3 equals 3.0).
A rating whose gold cannot be told (per-output gold of an item-level rating, a position the gold
does not name, a list for a comparative question) is not compared: it counts neither way.
"""

from __future__ import annotations

import json
import math
from typing import Any

NOT_COMPARABLE = None


def answer_text(value: Any) -> str | None:
    """A JSON scalar as text, as PostgreSQL's `value #>> '{}'` writes it; None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def parse_gold(text: str | None) -> Any:
    """A criterion's gold as read from the database as text (`gold -> key #>> '{}'`): a list or an
    object comes back as JSON text, a scalar as its own text."""
    if text is None:
        return None
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def gold_for(gold: Any, position: int | None) -> str | None:
    """The gold answer (as text) for the output at `position` (0-based, as uploaded), or for the
    item when `position` is None; None when the gold does not name one."""
    if isinstance(gold, list):
        if position is None or not 0 <= position < len(gold):
            return None
        value = gold[position]
    elif isinstance(gold, dict):
        value = None if position is None else gold.get(str(position))
    else:
        value = gold
    if isinstance(value, (list, dict)):  # a comparative question's order of systems: not one answer
        return None
    text = answer_text(value)
    return text if text not in (None, "") else None


def agrees(expected: str, given: Any, *, numeric: bool = False) -> bool:
    """Whether `given` (a rating's value or its text) is the gold answer `expected` (text)."""
    if given is None:
        return False
    if numeric:
        try:
            a, b = float(expected), float(given)
        except (TypeError, ValueError):
            return False
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return answer_text(given) == expected
