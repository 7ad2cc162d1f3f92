"""One study plan from entered inputs, with the gaps filled from a pilot study's estimates.

Shared by `manage.py plan_study` and the plan page. Entered values win over the pilot's; every
input used is reported with where it came from ("entered", "pilot" or "default").
"""

from __future__ import annotations

from typing import Any, Mapping

from annotation.stats.power import InvalidArgument, pairwise_plan, scores_plan

DEFAULTS = {"raters": 3, "power": 0.8, "alpha": 0.05, "ties": 0.0}
FROM_PILOT_SCORES = ("sd", "icc", "corr")


def pilot_inputs(pilot: Mapping[str, Any] | None) -> tuple[dict[str, float], dict[str, str]]:
    """Values the pilot can supply (raters, sd, icc, corr, ties, win_prob), and why the others are missing."""
    values: dict[str, float] = {}
    missing: dict[str, str] = {}
    if (pilot or {}).get("raters_per_output"):  # the pilot study's own design, not a default of 3
        values["raters"] = pilot["raters_per_output"]
    scores = (pilot or {}).get("scores")
    if scores:
        for name in FROM_PILOT_SCORES:
            if scores[name]["value"] is not None:
                # a negative ICC estimate says the true reliability is about 0
                values[name] = max(0.0, scores[name]["value"]) if name == "icc" else scores[name]["value"]
            else:
                missing[name] = scores[name]["reason"]
    pairwise = (pilot or {}).get("pairwise")
    if pairwise:
        if pairwise["tie_share"] is not None:
            values["ties"] = pairwise["tie_share"]
        if pairwise["win_rate"] is not None and pairwise["win_rate"] != 0.5:
            values["win_prob"] = pairwise["win_rate"]
        elif pairwise["reason"]:
            missing["win_prob"] = pairwise["reason"]
    return values, missing


def study_plan(entered: Mapping[str, Any], *, pilot: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A plan for scores when `delta` is given and for comparisons when a win probability is known
    (entered as win_prob or bt_diff, or the pilot's closest pair's win rate).

    `entered` holds the user's values (None or absent when not given). Raises InvalidArgument
    naming the input at fault, also when a needed input is neither entered nor in the pilot.
    """
    from_pilot, missing = pilot_inputs(pilot)
    given = {k: v for k, v in entered.items() if v is not None}
    sources: dict[str, str] = {}

    def value(name: str, *, required: bool = True) -> Any:
        if name in given:
            sources[name] = "entered"
            return given[name]
        if name in from_pilot and not (name == "win_prob" and "bt_diff" in given):
            sources[name] = "pilot"
            return from_pilot[name]
        if name in DEFAULTS:
            sources[name] = "default"
            return DEFAULTS[name]
        if required:
            why = f" (the pilot: {missing[name]})" if name in missing else ""
            raise InvalidArgument(name, f"required: enter it{' or take it from a pilot study' if pilot is None else ''}"
                                        f"{why}")
        return None

    plan: dict[str, Any] = {"scores": None, "pairwise": None, "sources": sources, "pilot": pilot}
    if given.get("delta") is not None:
        plan["scores"] = scores_plan(delta=value("delta"), sd=value("sd"), icc=value("icc"), corr=value("corr"),
                                     raters=value("raters"), power=value("power"), alpha=value("alpha"))
    win_prob = value("win_prob", required=False)
    bt_diff = given.get("bt_diff")
    if bt_diff is not None:
        sources["bt_diff"] = "entered"
    if win_prob is not None or bt_diff is not None:
        if win_prob is not None and bt_diff is not None:
            raise InvalidArgument("bt_diff", "give a win probability or a Bradley–Terry difference, not both")
        plan["pairwise"] = pairwise_plan(win_prob=win_prob, bt_diff=bt_diff, ties=value("ties"),
                                         power=value("power"), alpha=value("alpha"))
    if plan["scores"] is None and plan["pairwise"] is None:
        why = f" (the pilot gives no win probability: {missing['win_prob']})" if "win_prob" in missing else ""
        raise InvalidArgument("delta", "nothing to plan: give delta (scores) or a win probability or "
                                       f"Bradley–Terry difference (comparisons){why}")
    return plan
