"""Reading a long CSV of comparative judgements, recognised by its header, validated whole.

    pairwise:   item,rater,system_a,system_b,winner   (system_a shown first; winner a name or `tie`)
    ranking:    item,rater,system,rank                (1 = best; ties as equal or average ranks, 3.5)
    best-worst: item,rater,shown,best,worst           (shown = names joined by `|`)

Errors name the line (the header is line 1) and the column, as annotation.stats.tables does.
Concord's own files (its export, preference pairs, the Python client's table) are read as they are
(annotation.stats.comparison_exports).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.stats import comparison_exports as exports
from annotation.stats import comparisons as cmp
from annotation.stats.pairwise_csv import PairwiseSums, read_pairwise_sums
from annotation.stats.tables import TableError, read_table, sniff

KINDS = {
    "pairwise": ("item", "rater", "system_a", "system_b", "winner"),
    "ranking": ("item", "rater", "system", "rank"),
    "best_worst": ("item", "rater", "shown", "best", "worst"),
}


@dataclass
class Comparisons:
    kind: str
    wins: list[cmp.Win] = field(default_factory=list)
    pairwise: list[tuple[str, str, str]] = field(default_factory=list)  # (shown first, second, winner)
    rankings: list[dict[str, float]] = field(default_factory=list)
    best_worst: list[tuple[list[str], str, str]] = field(default_factory=list)
    # A pairwise file comes summed (annotation.stats.pairwise_csv), wins and pairwise left empty.
    sums: PairwiseSums | None = None
    # Answers whose shown order is known (Concord's export): (K shown, the first shown was best).
    first_best: list[tuple[int, bool]] = field(default_factory=list)
    # Preference pairs come as a win matrix (systems, wins) and what their weights are.
    matrix: tuple[list[str], Any] | None = None
    note: str = ""


def _kind(columns: list[str]) -> str:
    found = set(columns)
    for kind, needed in KINDS.items():
        if set(needed) <= found:
            return kind
    headers = "; ".join(f"{k}: {','.join(v)}" for k, v in KINDS.items())
    raise TableError(f"header {','.join(columns)!r} is none of the known kinds ({headers})", row=1)


def _header(path: str | Path) -> list[str]:
    """The header alone; a file pandas cannot start reading is read whole, for read_table's error."""
    if sniff(path) == "csv":
        try:
            return [c.strip() for c in pd.read_csv(path, nrows=0, dtype=str, skipinitialspace=True).columns]
        except Exception:  # noqa: BLE001 - read_table names what is wrong
            pass
    return list(read_table(path, ()).columns)


def read_comparisons(path: str | Path, criterion: str | None = None) -> Comparisons:
    """The file's judgements; a pairwise CSV as its sums (Comparisons.sums), read in bulk. Concord's own
    files are read as they are (comparison_exports): the long export (CSV, JSON lines, Parquet), the Python
    client's comparisons table and preference pairs; `criterion` picks one comparative criterion."""
    columns = _header(path)
    header = set(columns)
    if set(exports.PAIRS_COLUMNS) <= header:
        return _pairs(read_table(path, exports.PAIRS_COLUMNS, nonempty=()))
    if set(exports.EXPORT_COLUMNS) <= header:
        return exports.read_export(exports.records(read_table(path, exports.EXPORT_COLUMNS, nonempty=())),
                                   criterion, Comparisons)
    if set(exports.CLIENT_COLUMNS) <= header:
        return exports.read_client_table(read_table(path, exports.CLIENT_COLUMNS, nonempty=()), criterion,
                                         Comparisons)
    kind = _kind(columns)
    if kind == "pairwise" and sniff(path) == "csv" and (sums := read_pairwise_sums(path)) is not None:
        return Comparisons(kind, sums=sums)
    df = read_table(path, KINDS[kind])
    rows = df.apply(lambda c: c.str.strip())
    out = Comparisons(kind)
    if kind == "pairwise":
        for i, r in enumerate(rows.itertuples(index=False), start=2):
            if r.system_a == r.system_b:
                raise TableError(f"a system compared with itself ({r.system_a!r})", row=i, column="system_b")
            if r.winner not in (r.system_a, r.system_b, "tie"):
                raise TableError(f"{r.winner!r} is neither {r.system_a!r}, {r.system_b!r} nor 'tie'", row=i,
                                 column="winner")
            out.pairwise.append((r.system_a, r.system_b, r.winner))
            out.wins += cmp.pairs_from_pairwise(r.system_a, r.system_b, r.winner)
    elif kind == "ranking":
        ranks = pd.to_numeric(rows["rank"], errors="coerce")
        for i, value in enumerate(ranks, start=2):
            # Ties come as equal ranks (1,1,3) or as average ranks (3.5 for places 3 and 4, as R's and
            # pandas' rank() write them): both are multiples of 0.5, and Kendall's W re-ranks them to mid-ranks.
            if pd.isna(value) or value < 1 or value * 2 != int(value * 2):
                raise TableError(f"not a rank (a number from 1: whole, or an average rank such as 3.5 for a tie): "
                                 f"{rows['rank'].iloc[i - 2]!r}", row=i, column="rank")
        rows = rows.assign(rank=ranks)
        seen: dict[tuple[str, str, str], int] = {}
        for i, r in enumerate(rows.itertuples(index=False), start=2):
            key = (r.item, r.rater, r.system)
            if key in seen:
                raise TableError(f"rater {r.rater!r} ranked {r.system!r} twice on item {r.item!r} (first on line "
                                 f"{seen[key]})", row=i, column="system")
            seen[key] = i
        for _, group in rows.groupby(["item", "rater"], sort=True):
            ranking = dict(zip(group["system"], group["rank"].astype(float)))
            if len(ranking) >= 2:
                out.rankings.append(ranking)
                out.wins += cmp.pairs_from_ranking(ranking)
    else:
        for i, r in enumerate(rows.itertuples(index=False), start=2):
            shown = [s.strip() for s in r.shown.split("|")]
            if len(shown) < 2 or len(set(shown)) != len(shown) or "" in shown:
                raise TableError("needs two or more different system names joined by '|'", row=i, column="shown")
            for col in ("best", "worst"):
                if getattr(r, col) not in shown:
                    raise TableError(f"{getattr(r, col)!r} was not shown ({r.shown})", row=i, column=col)
            if r.best == r.worst:
                raise TableError("best and worst are the same system", row=i, column="worst")
            out.best_worst.append((shown, r.best, r.worst))
            out.wins += cmp.pairs_from_best_worst(shown, r.best, r.worst)
    return out


def _pairs(df: pd.DataFrame) -> Comparisons:
    systems, wins, weights = exports.pairs_matrix(exports.records(df))
    note = ("preference pairs of a comparative study: each side's share of the judgements of the pair; pairs "
            "split evenly are not in the file, and the order shown is not known" if weights == "shares" else
            "preference pairs of a rated study: one judgement per pair, for the output whose consensus was higher")
    return Comparisons("pairwise", matrix=(systems, wins), note=note)


def comparisons_report(data: Comparisons) -> dict[str, Any]:
    """The `comparisons` command's JSON (see its --help)."""
    if data.matrix is not None:
        return {**matrix_report(data.kind, *data.matrix), "source": data.note}
    if data.sums is not None:
        report = matrix_report(data.kind, data.sums.systems, data.sums.wins)
        report["position"] = cmp.position_effect_counts(data.sums.first_wins, data.sums.decided)
        return report
    report = matrix_report(data.kind, *cmp.win_matrix(data.wins))
    if data.kind == "best_worst":
        report["bws_count"] = cmp.best_worst_counts(data.best_worst)
    if data.kind == "ranking":
        report["kendall_w"] = cmp.kendall_w(data.rankings)
    if data.kind != "pairwise" and data.first_best:
        report["position"] = cmp.first_shown_best(data.first_best)
    if data.kind == "pairwise":
        report["position"] = cmp.position_effect(data.pairwise)
    return report


def matrix_report(kind: str, systems: list[str], wins) -> dict[str, Any]:
    """The part of comparisons_report that needs only the win matrix (cmp.win_matrix): Bradley–Terry
    with intervals and the win rates. Large studies sum their judgements into it without a list."""
    bt = cmp.bradley_terry_matrix(systems, wins)
    report: dict[str, Any] = {"kind": kind, "systems": bt["systems"], "win_rates": cmp.win_rates_matrix(systems, wins)}
    if bt["reason"]:
        report["bt_reason"] = bt["reason"]
    return report
