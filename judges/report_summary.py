"""The judges' part of the report summary (settings.REPORT_SUMMARIES): per criterion and judge,
whether it can stand in for the humans — the alt-test verdict of "Judges vs humans" (or its rule
when the alt-test cannot run) — and what PPI++ gives against the human-only estimate ("Trusting
the judges"): the systems' intervals, how many human ratings the judge was worth, and whether the
ranking it gives is the humans'. Read from those sections' data: nothing is computed twice.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from judges import report_section, report_trust

TITLE = "Can the judges stand in for the humans?"


def _ppi(entry: Mapping[str, Any] | None, judge: str) -> dict[str, Any] | None:
    run = next((r for r in (entry or {}).get("runs", []) if r["name"] == judge and r.get("systems")), None)
    if run is None:
        return None
    systems = run["systems"]
    widths_h, widths_p, effective, humans = [], [], 0.0, 0
    for s in systems.values():
        h, p = s["human_only"], s["ppi_plus"]
        if h.get("ci") and p.get("ci"):
            widths_h.append(h["ci"][1] - h["ci"][0])
            widths_p.append(p["ci"][1] - p["ci"][0])
            effective += p.get("effective_n") or 0.0
            humans += h.get("n") or 0
    if not widths_h:
        return {"reason": next((s["ppi_plus"].get("reason") for s in systems.values() if s["ppi_plus"].get("reason")),
                               "no system has both intervals")}
    by = {name: s for name, s in systems.items() if s["human_only"].get("mean") is not None
          and s["ppi_plus"].get("mean") is not None}
    human_rank = sorted(by, key=lambda n: -by[n]["human_only"]["mean"])
    ppi_rank = sorted(by, key=lambda n: -by[n]["ppi_plus"]["mean"])
    return {"human_only_width": sum(widths_h) / len(widths_h), "ppi_plus_width": sum(widths_p) / len(widths_p),
            "human_n": humans, "effective_n": effective, "same_ranking": human_rank == ppi_rank,
            "human_ranking": human_rank, "ppi_ranking": ppi_rank}


def judges_summary(study, report: Mapping[str, Any], sections: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    vs = next((s for s in sections if s["title"] == report_section.TITLE), None)
    if vs is None or not (vs.get("data") or {}).get("criteria"):
        return None
    trust = next((s for s in sections if s["title"] == report_trust.TITLE), None)
    trusted = ((trust or {}).get("data") or {}).get("criteria", {})
    names = {c["key"]: c.get("name", c["key"]) for c in report.get("criteria", [])}
    rows = []
    for key, result in vs["data"]["criteria"].items():
        for judge, r in result["judges"].items():
            v = r["verdict"]
            rows.append({"criterion": key, "name": names.get(key, key), "judge": judge, "stands_in": v["passed"],
                         "verdict": v["label"], "method": v["method"], "why": v["why"],
                         "ppi": _ppi(trusted.get(key), judge)})
    per_criterion = {}
    for row in rows:
        per_criterion.setdefault(row["criterion"], []).append(row)
    answers = {key: [r["judge"] for r in crit_rows if r["stands_in"]] for key, crit_rows in per_criterion.items()}
    data = {"rows": rows, "stands_in": answers}
    return {"key": "judges", "title": TITLE, "template": "judges/report_summary.html",
            "context": {"rows": rows, "answers": answers, "names": names}, "data": data}
