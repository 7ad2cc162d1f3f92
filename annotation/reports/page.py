"""The report page's tables: the report dict rearranged for templates, which cannot index a
dict by a variable key."""

from __future__ import annotations

from typing import Any


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
            "comparisons": _comparisons(report, (plots or {}).get("comparisons") or {})}


def _comparisons(report: dict[str, Any], plots: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key, c in (report.get("comparisons") or {}).items():
        bws = c.get("bws_count") or {}
        rows = [{"system": s, **v, "bws": bws.get(s)} for s, v in (c.get("systems") or {}).items()]
        rows.sort(key=lambda r: -(r["bt"] if r.get("bt") is not None else bws.get(r["system"], 0) - 1e9))
        label = {"pairwise": "pairwise", "ranking": "ranking", "best_worst": "best–worst"}.get(c.get("kind"), c.get("kind"))
        out.append({**c, "kind_label": label, "rows": rows, "plots": plots.get(key) or {}})
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
