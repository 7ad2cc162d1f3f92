"""Comparative questions (pairwise, ranking, best_worst) for human raters: which outputs an
assignment shows, how an answer by shown number becomes the stored value, and gold checks.
Pure functions; the contract is docs/rubric-format.md, "Comparative questions".

    shown_design(rubric) -> ("all", 0) | ("pairwise", 2) | ("best_worst", tuple_size)
    pair_order(n, slot=s, seed=x) -> [i, j]           # output indexes shown to an item's slot-th rater
    tuple_order(n, size, slot=s, seed=x) -> [i, ...]
    clean_comparative(criterion, value, shown_ids) -> stored value      # ValueError names the problem
    gold_agrees(criterion, stored, gold, system_of) -> bool
"""

from __future__ import annotations

import random
from math import gcd
from typing import Any, Mapping

from django.utils.translation import gettext as _

from rubrics.schema import COMPARATIVE_KINDS, DEFAULT_TUPLE_SIZE

STRENGTHS = ("slightly", "clearly")


def is_comparative(criterion: dict) -> bool:
    return criterion["kind"] in COMPARATIVE_KINDS


def shown_design(rubric: dict) -> tuple[str, int]:
    """How many outputs an assignment shows: a pairwise question shows two, a best_worst question
    a tuple of `tuple_size`; otherwise all (the schema allows only one of the two)."""
    for c in rubric["criteria"]:
        if c["kind"] == "pairwise":
            return "pairwise", 2
        if c["kind"] == "best_worst":
            return "best_worst", c.get("tuple_size", DEFAULT_TUPLE_SIZE)
    return "all", 0


# ---------------------------------------------------------------- balanced designs


def pair_order(n: int, *, slot: int, seed: int) -> list[int]:
    """The ordered pair an item's `slot`-th rater sees. Every unordered pair once (in a random
    orientation per item), then every pair once more in the other orientation, then again: over
    2·C(n, 2) consecutive slots each ordered pair is shown exactly once, so each pair appears in
    both orders and every output equally often in first and second place. Deterministic in the
    seed, so slots taken at different times (or retaken after an expiry) fit one design."""
    if n < 2:
        return list(range(n))
    rng = random.Random(seed)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    rng.shuffle(pairs)
    pairs = [(j, i) if rng.random() < 0.5 else (i, j) for i, j in pairs]
    sequence = pairs + [(j, i) for i, j in pairs]
    return list(sequence[slot % len(sequence)])


def tuple_order(n: int, size: int, *, slot: int, seed: int) -> list[int]:
    """The tuple an item's `slot`-th rater sees, in the order shown. The outputs stand in a random
    circle per item; slot s takes the `size` consecutive places from s·size: over n / gcd(n, size)
    consecutive slots every output appears exactly size / gcd(n, size) times. The order within a
    tuple is random per slot. An item with no more than `size` outputs shows them all."""
    rng = random.Random(seed)
    circle = list(range(n))
    rng.shuffle(circle)
    if n <= size:
        chosen = circle
    else:
        start = (slot * size) % n
        chosen = [circle[(start + k) % n] for k in range(size)]
    random.Random(f"{seed}/{slot}").shuffle(chosen)
    return chosen


def slots_per_round(n: int, design: tuple[str, int]) -> int:
    """Slots after which an item's design has shown everything evenly (for reports and tests)."""
    kind, size = design
    if kind == "pairwise":
        return max(1, n * (n - 1))
    if kind == "best_worst" and n > size:
        return n // gcd(n, size)
    return max(1, n)


# ---------------------------------------------------------------- answers


def _ascii_digits(text: str) -> bool:
    """'0'-'9' only: str.isdigit() also takes '٣' (which int() reads as 3) and '²' (which int() refuses
    with Python's own words, shown to the rater); a long run of digits is no rank either."""
    return text.isascii() and text.isdigit() and len(text) <= 6


def _shown_number(value: Any, k: int, what: str) -> int:
    text = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if not _ascii_digits(text) or not 1 <= int(text) <= k:
        raise ValueError(f"{what} must be one of the responses shown, 1 to {k}")
    return int(text)


def clean_comparative(criterion: dict, value: Any, shown_ids: list[int]) -> dict:
    """An answer by shown number -> the stored value by output id (docs/rubric-format.md)."""
    kind, k = criterion["kind"], len(shown_ids)
    if kind == "pairwise":
        return _clean_pairwise(criterion, value, shown_ids)
    if not isinstance(value, Mapping):
        raise ValueError("give the answer as an object" + (" with ranks" if kind == "ranking" else " with best and worst"))
    if kind == "ranking":
        ranks = value.get("ranks")
        extra = sorted(set(value) - {"ranks"})
        if extra or not isinstance(ranks, Mapping):
            raise ValueError("give a rank for each response shown, as {\"ranks\": {\"1\": 1, ...}}")
        given: dict[int, int] = {}
        for number, rank in ranks.items():
            n = _shown_number(number, k, "a ranked response")
            if isinstance(rank, bool) or not isinstance(rank, (int, str)) or not _ascii_digits(str(rank).strip()):
                raise ValueError(f"Response {n}: give a whole-number rank from 1 to {k}")
            given[n] = int(str(rank).strip())
        missing = [n for n in range(1, k + 1) if n not in given]
        if missing:
            raise ValueError(_("rank every response shown (missing: %s)")
                             % ", ".join(_("Response %(n)s") % {"n": n} for n in missing))
        if any(not 1 <= r <= k for r in given.values()):
            raise ValueError(f"ranks go from 1 (best) to {k}")
        if not criterion.get("ties") and sorted(given.values()) != list(range(1, k + 1)):
            raise ValueError(_("give each response a different rank from 1 to %(k)s (this question allows no ties)") % {"k": k})
        return {"shown": list(shown_ids), "ranks": [given[n] for n in range(1, k + 1)]}
    if kind == "best_worst":
        extra = sorted(set(value) - {"best", "worst"})
        if extra:
            raise ValueError(f"unknown field(s) {', '.join(map(repr, extra))}; give best and worst")
        if value.get("best") in (None, "") or value.get("worst") in (None, ""):
            raise ValueError(_("choose both the best and the worst response"))
        best = _shown_number(value["best"], k, "best")
        worst = _shown_number(value["worst"], k, "worst")
        if best == worst:
            raise ValueError(_("the best and the worst must be different responses"))
        return {"shown": list(shown_ids), "best": shown_ids[best - 1], "worst": shown_ids[worst - 1]}
    raise ValueError(f"unknown comparative kind {kind!r}")


def _clean_pairwise(criterion: dict, value: Any, shown_ids: list[int]) -> dict:
    if len(shown_ids) != 2:
        raise ValueError("a pairwise question compares exactly two responses")
    if isinstance(value, Mapping):
        extra = sorted(set(value) - {"winner", "strength"})
        if extra:
            raise ValueError(f"unknown field(s) {', '.join(map(repr, extra))}; give winner and strength")
        winner, strength = value.get("winner"), value.get("strength")
    else:
        winner, strength = value, None
    if str(winner).strip().lower() == "tie":
        if not criterion.get("ties"):
            raise ValueError("choose Response 1 or Response 2 (this question allows no tie)")
        if strength not in (None, ""):
            raise ValueError("a tie has no strength")
        return {"shown": list(shown_ids), "winner": "tie", "strength": None}
    if winner in (None, ""):
        raise ValueError(_("choose the better response or a tie") if criterion.get("ties") else _("choose the better response"))
    n = _shown_number(winner, 2, "the winner")
    if criterion.get("strength"):
        if strength not in STRENGTHS:
            raise ValueError(_("say whether it is slightly or clearly better"))
    elif strength not in (None, ""):
        raise ValueError("this question asks for no strength")
    return {"shown": list(shown_ids), "winner": shown_ids[n - 1], "strength": strength or None}


def form_value(criterion: dict, data: Mapping[str, Any], name: str, n_shown: int) -> Any:
    """The workspace form's fields for one comparative question -> its answer value (None: blank).
    pairwise: <name> (1/2/tie), <name>__strength; ranking: <name>__rank__<n>;
    best_worst: <name>__best, <name>__worst."""
    kind = criterion["kind"]
    if kind == "pairwise":
        winner = str(data.get(name, "") or "")
        if not winner:
            return None
        return {"winner": winner, "strength": str(data.get(f"{name}__strength", "") or "") or None}
    if kind == "ranking":
        ranks = {str(n): str(data.get(f"{name}__rank__{n}", "") or "") for n in range(1, n_shown + 1)}
        ranks = {n: r for n, r in ranks.items() if r}
        return {"ranks": ranks} if ranks else None
    best, worst = str(data.get(f"{name}__best", "") or ""), str(data.get(f"{name}__worst", "") or "")
    return {"best": best, "worst": worst} if best or worst else None


def form_fields(criterion: dict, name: str, n_shown: int) -> list[str]:
    """Every form field name the question's widget may post (so none is taken as unknown)."""
    kind = criterion["kind"]
    if kind == "pairwise":
        return [name, f"{name}__strength"]
    if kind == "ranking":
        return [f"{name}__rank__{n}" for n in range(1, n_shown + 1)]
    return [f"{name}__best", f"{name}__worst"]


# ---------------------------------------------------------------- gold


def gold_agrees(criterion: dict, stored: dict, gold: Any, system_of: Mapping[int, str]) -> bool:
    """Whether a stored comparative answer agrees with gold naming systems (a list best first, or
    one name meaning "this one is best"). Outputs the gold does not name rank below those it does."""
    order = [gold] if isinstance(gold, str) else list(gold or [])
    place = {name: i for i, name in enumerate(order)}

    def rank(output_id: int) -> int:
        return place.get(system_of.get(output_id, ""), len(order))

    shown = stored["shown"]
    kind = criterion["kind"]
    if kind == "pairwise":
        a, b = shown
        if rank(a) == rank(b):
            return stored["winner"] == "tie" or not criterion.get("ties")
        return stored["winner"] == (a if rank(a) < rank(b) else b)
    if kind == "ranking":
        by_rater = dict(zip(shown, stored["ranks"]))
        return all((rank(x) < rank(y)) <= (by_rater[x] < by_rater[y])
                   for x in shown for y in shown if x != y and rank(x) != rank(y))
    if kind == "best_worst":
        ranks = sorted(rank(o) for o in shown)
        return rank(stored["best"]) == ranks[0] and rank(stored["worst"]) == ranks[-1]
    return False
