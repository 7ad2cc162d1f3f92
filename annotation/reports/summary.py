"""The report's summary, the answers first: per criterion a reliability verdict, the system ranking
with the differences that are significant after Holm's correction, what the judges can do (the
judges app's part, settings.REPORT_SUMMARIES), and what to do next.

Made from the report dict alone (plus the other apps' parts), so the page, the HTML, JSON and CSV
downloads give the same summary.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from django.conf import settings
from django.utils.module_loading import import_string

from annotation.labels import NOT_RELIABLE, RELIABLE, UNCERTAIN, UNDEFINED
from annotation.stats.icc import raters_for_reliability

SIGNIFICANCE = 0.05  # Holm-adjusted p below this is a significant difference
SPREAD_TO_RERATE = 0.25  # an output whose raters' SD is at least this share of the scale's range
MAX_RERATE = 10
GOLD_TO_CHECK = 0.7  # a rater below this share of gold answers right is worth a look


def _interval(s: Mapping[str, Any]) -> list[float] | None:
    return s.get("bootstrap_ci") or s.get("ci")


def verdict(value: float | None, ci: Sequence[float] | None, threshold: float) -> tuple[str, str]:
    """(verdict, why), the verdict one of annotation.labels.RELIABILITY_VERDICTS: reliable when the whole
    interval clears the threshold, not reliable when the whole interval is below it, uncertain when the
    interval straddles it."""
    if value is None:
        return UNDEFINED, "undefined for these data"
    if ci:
        if ci[0] >= threshold:
            return RELIABLE, f"the whole interval is at or above {threshold:g}"
        if ci[1] < threshold:
            return NOT_RELIABLE, f"the whole interval is below {threshold:g}"
        side = "at or above" if value >= threshold else "below"
        return UNCERTAIN, f"the estimate is {side} {threshold:g} but the interval reaches across it"
    return (RELIABLE if value >= threshold else NOT_RELIABLE), f"no interval; the estimate against {threshold:g}"


def _reliability(report: Mapping[str, Any], threshold: float) -> list[dict[str, Any]]:
    names = {c["key"]: c for c in report.get("criteria", [])}
    rows = []
    for key, a in report.get("agreement", {}).items():
        numeric = a["icc1"]["value"] is not None or names.get(key, {}).get("measure") == "numeric"
        basis = a["icc1"] if numeric else a["alpha"]
        code, why = verdict(basis["value"], _interval(basis), threshold)
        rows.append({"criterion": key, "name": names.get(key, {}).get("name", key),
                     "statistic": "ICC1" if numeric else f"alpha ({a['alpha_level']})",
                     "alpha": {"value": a["alpha"]["value"], "ci": _interval(a["alpha"]), "level": a["alpha_level"]},
                     "icc1": {"value": a["icc1"]["value"], "ci": _interval(a["icc1"])},
                     "threshold": threshold, "verdict": code, "why": basis.get("reason") or why})
    return rows


def _ranking(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    names = {c["key"]: c.get("name", c["key"]) for c in report.get("criteria", [])}
    comps = report.get("systems", {}).get("criteria", {})
    order = ["combined"] + list(names)
    out = []
    for key in sorted(comps, key=lambda k: order.index(k) if k in order else len(order)):
        comp = comps[key]
        means = {s: v["mean"] for s, v in comp["systems"].items()}
        significant, unclear = [], []
        for p in comp["pairs"]:
            better, worse = (p["a"], p["b"]) if means[p["a"]] >= means[p["b"]] else (p["b"], p["a"])
            entry = {"better": better, "worse": worse, "p_holm": p["p_holm"], "n_items": p["n_items"]}
            (significant if p["p_holm"] is not None and p["p_holm"] < SIGNIFICANCE else unclear).append(entry)
        significant.sort(key=lambda e: comp["ranking"].index(e["better"]))
        out.append({"criterion": key, "name": "Combined (rubric weights)" if key == "combined" else names.get(key, key),
                    "ranking": [{"system": s, "mean": means[s], "ci": comp["systems"][s]["ci"]} for s in comp["ranking"]],
                    "significant": significant, "not_significant": unclear, "alpha": SIGNIFICANCE,
                    "correction": "Holm",
                    # under an active design the pairs are tested on the Hájek-weighted difference (compare_systems)
                    "test": comp["pairs"][0].get("test", "Wilcoxon") if comp["pairs"] else "Wilcoxon"})
    return out


def _to_rerate(report: Mapping[str, Any], reliability: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Outputs whose raters disagree most, on the criteria that are not reliable (widest spread first)."""
    weak = {r["criterion"] for r in reliability if r["verdict"] in (NOT_RELIABLE, UNCERTAIN)}
    ranges = {c["key"]: (c["max"] - c["min"]) for c in report.get("criteria", [])
              if c["key"] in weak and c.get("min") is not None and c.get("max") is not None and c["max"] > c["min"]}
    found = []
    for row in report.get("consensus", {}).get("rows", []):
        for key, cell in row["criteria"].items():
            if key in ranges and cell.get("sd") is not None and cell["sd"] >= SPREAD_TO_RERATE * ranges[key]:
                found.append({"item": row["item"], "output": row["output"], "criterion": key,
                              "sd": cell["sd"], "spread": cell["sd"] / ranges[key]})
    found.sort(key=lambda f: -f["spread"])
    return found[:MAX_RERATE]


def _raters_to_check(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Raters whose flags, gold accuracy or rater-model estimates say to look at their work (never
    a rejection: payment decisions follow the study's attention policy)."""
    modelled = {r["rater"]: r["reasons"] for r in (report.get("rater_models") or {}).get("to_check", [])}
    out = []
    for name in list(report.get("raters", {})) + sorted(set(modelled) - set(report.get("raters", {}))):
        info = report.get("raters", {}).get(name, {})
        reasons = list(info.get("flags") or [])
        gold = info.get("gold_accuracy")
        if gold is not None and gold < GOLD_TO_CHECK:
            reasons.append(f"gold accuracy {gold:.2f}")
        reasons += modelled.get(name, [])
        if reasons:
            out.append({"rater": name, "reasons": reasons})
    return out


def _more_raters(report: Mapping[str, Any], reliability: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Raters per item the planner asks for: the most any numeric criterion needs for the mean of its
    raters to reach the threshold (Spearman–Brown from its ICC1)."""
    now = report.get("study", {}).get("raters_per_item")
    per = {}
    for r in reliability:
        if r["statistic"] == "ICC1" and r["icc1"]["value"] is not None:
            per[r["criterion"]] = raters_for_reliability(r["icc1"]["value"], threshold)
    known = [k for k in per.values() if k is not None]
    needed = max(known) if known else None
    return {"raters_per_item": now, "needed": needed, "more": max(0, needed - now) if needed and now else None,
            "per_criterion": per, "unreachable": sorted(k for k, v in per.items() if v is None),
            "method": "Spearman–Brown: k = t(1 − ICC1) / (ICC1 (1 − t)), the raters whose mean reaches ICC ≥ t"}


def report_summary(report: Mapping[str, Any], parts: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The summary of `report` (with its threshold set), with the other apps' `parts` (their `data`)."""
    threshold = report.get("settings", {}).get("icc_threshold", 0.7)
    reliability = _reliability(report, threshold)
    return {
        "reliability": reliability,
        "ranking": _ranking(report),
        "judges": {p["key"]: p.get("data") for p in parts},
        "next": {"rerate": _to_rerate(report, reliability), "raters_to_check": _raters_to_check(report),
                 "more_raters": _more_raters(report, reliability, threshold)},
    }


def summary_parts(study, report: Mapping[str, Any], sections: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Summary parts other apps add (settings.REPORT_SUMMARIES: callables or dotted paths taking
    (study, report, sections) and returning None or {"key", "title", "template", "context", "data"})."""
    found = []
    for entry in getattr(settings, "REPORT_SUMMARIES", []):
        fn = import_string(entry) if isinstance(entry, str) else entry
        part = fn(study, report, sections)
        if part:
            found.append(part)
    return found


def summary_csv_rows(summary: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The summary as report CSV rows (section `summary`), first in the file."""
    for r in summary["reliability"]:
        for name in ("alpha", "icc1"):
            s = r[name]
            ci = s["ci"] or [None, None]
            yield ["summary", r["criterion"], "", name, s["value"], ci[0], ci[1], ""]
        yield ["summary", r["criterion"], "", f"reliability_{r['statistic'].split()[0].lower()}_vs_{r['threshold']:g}",
               r["verdict"], None, None, r["why"]]
    for rank in summary["ranking"]:
        yield ["summary", rank["criterion"], "", "ranking", " > ".join(s["system"] for s in rank["ranking"]),
               None, None, ""]
        for e in rank["significant"]:
            yield ["summary", rank["criterion"], f"{e['better']} > {e['worse']}", "significant_p_holm", e["p_holm"],
                   None, None, f"Holm-adjusted {rank.get('test', 'Wilcoxon')} p < {rank['alpha']}"]
    for key, data in summary["judges"].items():
        for row in (data or {}).get("rows", []):
            yield ["summary", row["criterion"], row["judge"], "judge_stands_in", row["stands_in"], None, None,
                   row["why"]]
    nxt = summary["next"]
    for r in nxt["rerate"]:
        yield ["summary", r["criterion"], f"{r['item']}#{r['output']}", "rerate_sd", r["sd"], None, None,
               "raters disagree on a criterion that is not reliable"]
    for r in nxt["raters_to_check"]:
        yield ["summary", "", r["rater"], "rater_to_check", "; ".join(r["reasons"]), None, None, ""]
    more = nxt["more_raters"]
    yield ["summary", "", "", "raters_per_item_needed", more["needed"], None, None,
           "" if more["needed"] is not None else "no numeric criterion with a positive ICC1"]
