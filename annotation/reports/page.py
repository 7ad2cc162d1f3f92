"""The report page's tables: the report dict rearranged for templates, which cannot index a
dict by a variable key."""

from __future__ import annotations

from typing import Any

from annotation.reports.rater_models import rater_models_view


def report_view(report: dict[str, Any], plots: dict[str, Any] | None = None) -> dict[str, Any]:
    """Tables for report_body.html (`plots`: report_plots' figures, to sit beside their tables)."""
    names = {c["key"]: c["name"] for c in report.get("criteria", [])}
    agreement = []
    for key, a in report.get("agreement", {}).items():
        details = []
        for name, value in _flat(a["details"], skip={"reasons", "icc_ci", "judges"}):
            details.append({"name": name, "value": value, "reason": a["details"]["reasons"].get(name)})
        agreement.append({"key": key, "name": names.get(key, key), **a, "detail_rows": details})
    consensus = report.get("consensus", {})
    numeric = [c for c in report.get("criteria", []) if c["key"] in {k for r in consensus.get("rows", [])
                                                                     for k in r["criteria"]}]
    cons_rows = []
    for r in consensus.get("rows", []):
        cells = [_with_half(r["criteria"].get(c["key"])) for c in numeric]
        cons_rows.append({**r, "cells": cells, "group_values": [(r.get("groups") or {}).get(g)
                                                                 for g in consensus.get("groups", [])]})
    systems = []
    order = ["combined"] + [c["key"] for c in report.get("criteria", [])]
    comparisons = report.get("systems", {}).get("criteria", {})
    for key, comp in sorted(comparisons.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99):
        rows = [{"system": s, "rank": i + 1, **comp["systems"][s]} for i, s in enumerate(comp["ranking"])]
        systems.append({"key": key, "name": names.get(key, "Combined (rubric weights)" if key == "combined" else key),
                        "rows": rows, "pairs": comp["pairs"]})
    accept = [{"key": k, "name": names.get(k, k), **v,
               "rows": sorted(v["systems"].items(), key=lambda kv: -kv[1])}
              for k, v in report.get("systems", {}).get("accept_rate", {}).items()]
    raters = [{"name": r, **info} for r, info in report.get("raters", {}).items()]
    return {"agreement": agreement, "consensus_criteria": numeric, "consensus_rows": cons_rows,
            "systems": systems, "accept": accept, "raters": raters,
            "groups": consensus.get("groups", []),
            "comparisons": _comparisons(report, (plots or {}).get("comparisons") or {}),
            "plot_tables": plot_tables(report), "rater_models": rater_models_view(report),
            "scales_shown": [c for c in report.get("criteria", []) if c.get("widget")]}


def _comparisons(report: dict[str, Any], plots: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, c in (report.get("comparisons") or {}).items():
        bws = c.get("bws_count") or {}
        rows = [{"system": s, **v, "bws": bws.get(s)} for s, v in (c.get("systems") or {}).items()]
        rows.sort(key=lambda r: -(r["bt"] if r.get("bt") is not None else bws.get(r["system"], 0) - 1e9))
        label = {"pairwise": "pairwise", "ranking": "ranking", "best_worst": "best–worst"}.get(c.get("kind"), c.get("kind"))
        wins = c.get("win_rates") or {}
        names = sorted(wins)
        win_table = {"columns": ["Row beats column"] + names,
                     "rows": [[a] + [_cell(wins[a].get(b)) for b in names] for a in names]}
        out.append({**c, "kind_label": label, "rows": rows, "plots": plots.get(key) or {}, "win_table": win_table})
    return out


def _with_half(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    if cell and cell.get("ci"):
        return {**cell, "half": (cell["ci"][1] - cell["ci"][0]) / 2}
    return cell


def _flat(tree: dict[str, Any], prefix: str = "", skip: set[str] = frozenset()):
    for k, v in tree.items():
        if k in skip:
            continue
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        elif not isinstance(v, list):
            yield f"{prefix}{k}", v


PENDING = "pending"  # a plot the page's second request draws (report_plot.html)


def pending_plots(report: dict[str, Any]) -> dict[str, Any]:
    """report_plots' shape with a placeholder for each plot the page may show: those whose data table has rows,
    and each answered comparison's two. A plot that turns out empty replaces its placeholder with nothing."""
    tables = plot_tables(report)
    plots: dict[str, Any] = {name: PENDING for name in ("agreement", "distributions", "bias", "heatmap", "positions")
                             if (tables.get(name) or {}).get("rows")}
    plots["comparisons"] = {key: {"strengths": PENDING, "heatmap": PENDING}
                            for key, c in (report.get("comparisons") or {}).items() if c.get("n_answers")}
    return plots


def plot_tables(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each plot's data as a table ({"columns", "rows"}), shown on demand under the plot."""
    names = {c["key"]: c["name"] for c in report.get("criteria", [])}
    out: dict[str, dict[str, Any]] = {}

    def ci(s):
        c = s.get("bootstrap_ci") or s.get("ci") or [None, None]
        return c[0], c[1]

    rows = []
    for key, a in (report.get("agreement") or {}).items():
        for label, s in ((f"α ({a['alpha_level']})", a["alpha"]), ("ICC1", a["icc1"])):
            rows.append([names.get(key, key), label, s["value"], *ci(s)])
    out["agreement"] = {"columns": ["Criterion", "Statistic", "Value", "95% low", "95% high"], "rows": rows}
    rows = []
    for key, d in (report.get("distributions") or {}).items():
        for system, counts in d["systems"].items():
            rows.append([names.get(key, key), system, *[f"{v}: {n}" for v, n in zip(d["values"], counts)]])
    width = max((len(r) for r in rows), default=2) - 2
    out["distributions"] = {"columns": ["Criterion", "System"] + ["Count"] * width, "rows": rows}
    out["bias"] = {"columns": ["Rater", "Bias vs others", "Items"],
                   "rows": [[r, i.get("bias"), i.get("n_items")] for r, i in (report.get("raters") or {}).items()
                            if i.get("bias") is not None]}
    h = report.get("heatmap") or {}
    if h.get("raters"):
        out["heatmap"] = {"columns": ["Rater"] + h["items"],
                          "rows": [[r] + row for r, row in zip(h["raters"], h["matrix"])]}
    rows = []
    for key, positions in (report.get("position_effects") or {}).items():
        for pos, e in positions.items():
            c = e.get("ci") or [None, None]
            rows.append([names.get(key, key), pos, e["mean"], c[0], c[1], e["n"]])
    out["positions"] = {"columns": ["Criterion", "Position shown", "Mean", "95% low", "95% high", "n"], "rows": rows}
    for table in out.values():
        table["rows"] = [[_cell(v) for v in row] for row in table["rows"]]
    return out


def _cell(value: Any) -> str | None:
    if isinstance(value, float):
        return f"{value:.3f}"
    return None if value is None else str(value)
