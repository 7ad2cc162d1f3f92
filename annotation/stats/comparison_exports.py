"""Concord's own files read as comparative judgements, for the `comparisons` command:

- the long export (export_study --format csv, jsonl or parquet): the item-level rows of a pairwise, ranking or
  best_worst criterion, whose value holds the answer by output id with `systems`, the system of each
  shown id (annotation.reports.rating_sql.EXPORT_VALUE); ignored work and attention checks are left
  out, as the report leaves them out;
- the preference pairs (export_study --format pairs) of a comparative study: per item and pair of
  systems, each side's share of the judgements and their count, so the win matrix is the study's
  less the pairs split evenly (which are no pair). Pairs of a rated study (scores, not shares) count
  one judgement each, for the side the consensus preferred;
- the Python client's comparisons table (`Client.comparisons`, saved as Parquet, CSV or JSON lines).

Each comes as read_table reads it (every value as text); errors name the row as it counts them and
the column.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

import numpy as np

from annotation.stats import comparisons as cmp
from annotation.stats.tables import TableError

COMPARATIVE_KINDS = ("pairwise", "ranking", "best_worst")
EXPORT_COLUMNS = ("item", "rater", "criterion", "criterion_kind", "value")
CLIENT_COLUMNS = ("item", "rater", "criterion", "kind", "shown", "winner", "ranks", "best", "worst")
PAIRS_COLUMNS = ("chosen", "rejected", "metadata")
_TRUE = {"true", "t", "1", "yes"}


def add_answer(data, kind: str, shown: list[str], *, winner: str | None = None, ranks: Iterable[float] = (),
               best: str | None = None, worst: str | None = None) -> None:
    """One answer by system into a Comparisons: its raw form and the pairs it implies."""
    if kind == "pairwise":
        data.pairwise.append((shown[0], shown[1], winner))
        data.wins += cmp.pairs_from_pairwise(shown[0], shown[1], winner)
    elif kind == "ranking":
        ranking = dict(zip(shown, map(float, ranks)))
        data.rankings.append(ranking)
        data.wins += cmp.pairs_from_ranking(ranking)
        ranks = list(ranking.values())
        data.first_best.append((len(shown), ranks[0] == 1 and ranks.count(1) == 1))  # as the report counts
    else:
        data.best_worst.append((list(shown), best, worst))
        data.wins += cmp.pairs_from_best_worst(shown, best, worst)
        data.first_best.append((len(shown), best == shown[0]))


def records(df) -> Iterator[tuple[int, dict]]:
    """(the row's number as read_table counts it, its values as text) per row."""
    for line, record in zip(df.index + 2, df.to_dict("records")):
        yield int(line), record


def read_client_table(df, criterion: str | None, make) -> Any:
    """The Python client's comparisons table (/api/studies/SLUG/comparisons/: item, rater, criterion,
    kind, shown, winner, ranks, best, worst; systems by name in the order shown)."""
    rows = list(records(df))
    found = list(dict.fromkeys(r["criterion"].strip() for _, r in rows))
    key = _one(found, criterion)
    rows = [(n, r) for n, r in rows if r["criterion"].strip() == key]
    kind = rows[0][1]["kind"].strip()
    data = make(kind)
    for n, r in rows:
        shown = _json(r["shown"], n, "shown")
        if not isinstance(shown, list) or len(shown) < 2 or len(set(map(str, shown))) != len(shown):
            raise TableError("needs two or more different systems", row=n, column="shown")
        shown = [str(s) for s in shown]

        def picked(column: str, tie: bool = False) -> str:
            v = r[column].strip()
            if v not in shown and not (tie and v == "tie"):
                raise TableError(f"{v!r} is not one of the shown {shown}" + (" nor 'tie'" if tie else ""), row=n,
                                 column=column)
            return v

        if kind == "pairwise":
            add_answer(data, kind, shown, winner=picked("winner", tie=True))
        elif kind == "ranking":
            ranks = _json(r["ranks"], n, "ranks")
            if not isinstance(ranks, list) or len(ranks) != len(shown):
                raise TableError("one rank per shown system", row=n, column="ranks")
            add_answer(data, kind, shown, ranks=ranks)
        else:
            add_answer(data, kind, shown, best=picked("best"), worst=picked("worst"))
    return data


def _json(text: str, n: int, column: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TableError(f"not JSON: {exc.msg}", row=n, column=column) from exc


def _one(found: list[str], criterion: str | None) -> str:
    if not found:
        raise TableError("no pairwise, ranking or best_worst answers (rows whose criterion_kind is one of them)",
                         column="criterion_kind")
    if criterion is None and len(found) > 1:
        raise TableError(f"answers of {len(found)} comparative criteria ({', '.join(found)}): choose one with "
                         "--criterion", column="criterion")
    key = criterion if criterion is not None else found[0]
    if key not in found:
        raise TableError(f"--criterion {key!r} has no comparative answers here; the file has {', '.join(found)}",
                         column="criterion")
    return key


def read_export(records: Iterable[tuple[int, dict]], criterion: str | None, make) -> Any:
    """The comparative answers of one criterion of the long export (CSV or JSON lines records);
    `make(kind)` gives an empty Comparisons."""
    rows = [(n, r) for n, r in records if r["criterion_kind"].strip() in COMPARATIVE_KINDS]
    key = _one(list(dict.fromkeys(r["criterion"].strip() for _, r in rows)), criterion)
    rows = [(n, r) for n, r in rows if r["criterion"].strip() == key and not _left_out(r)]
    kind = rows[0][1]["criterion_kind"].strip() if rows else "pairwise"
    data = make(kind)
    for n, r in rows:
        _add_exported(data, kind, n, r)
    return data


def _left_out(record: dict) -> bool:
    return any(str(record.get(flag, "")).strip().lower() in _TRUE for flag in ("ignored", "is_attention_check"))


def _add_exported(data, kind: str, n: int, record: dict) -> None:
    value = _json(record["value"], n, "value")
    if not isinstance(value, dict) or not isinstance(value.get("shown"), list):
        raise TableError("not a comparative answer (an object with `shown`)", row=n, column="value")
    ids, systems = value["shown"], value.get("systems")
    if not isinstance(systems, list) or len(systems) != len(ids) or not all(isinstance(s, str) for s in systems):
        raise TableError("the answer has no `systems` naming each shown output (an export from before Concord "
                         "wrote them: export the study again)", row=n, column="value")
    by_id = {str(i): s for i, s in zip(ids, systems)}

    def system(key: str) -> str:
        v = value.get(key)
        if str(v) not in by_id:
            raise TableError(f"`{key}` {v!r} is not one of the shown outputs {ids}", row=n, column="value")
        return by_id[str(v)]

    if kind == "pairwise":
        if len(systems) != 2:
            raise TableError(f"a pairwise answer shows two outputs, not {len(systems)}", row=n, column="value")
        add_answer(data, kind, systems, winner="tie" if value.get("winner") == "tie" else system("winner"))
    elif kind == "ranking":
        ranks = value.get("ranks")
        if not isinstance(ranks, list) or len(ranks) != len(ids):
            raise TableError("`ranks` must give one rank per shown output", row=n, column="value")
        add_answer(data, kind, systems, ranks=ranks)
    else:
        add_answer(data, kind, systems, best=system("best"), worst=system("worst"))


def pairs_matrix(records: Iterable[tuple[int, dict]]) -> tuple[list[str], np.ndarray, str]:
    """The win matrix of a preference pairs file, and which kind of pairs it held."""
    wins: list[tuple[str, str, float]] = []
    shares = scores = 0
    for n, r in records:
        meta = _json(r["metadata"], n, "metadata")
        if not isinstance(meta, dict):
            raise TableError("a preference pair has a `metadata` object", row=n, column="metadata")
        try:
            chosen, rejected = str(meta["chosen_model"]), str(meta["rejected_model"])
            cs, rs = meta["chosen_scores"], meta["rejected_scores"]
            won, lost, count = float(cs["overall"]), float(rs["overall"]), cs["vote_count"]
        except (KeyError, TypeError, ValueError) as exc:
            raise TableError(f"missing or not a number: {exc}", row=n, column="metadata") from exc
        if _is_share(won, lost, count, rs.get("vote_count")):
            shares += 1
            wins += [(chosen, rejected, won * count), (rejected, chosen, lost * count)]
        else:
            scores += 1
            wins.append((chosen, rejected, 1.0))
    if not wins:
        raise TableError("no preference pairs")
    if shares and scores:
        raise TableError("pairs of shares (a comparative study) mixed with pairs of scores (a rated study)")
    systems, matrix = cmp.win_matrix(wins)
    return systems, matrix, "shares" if shares else "scores"


def _is_share(won: float, lost: float, count: Any, other: Any) -> bool:
    """A comparative study's pair: two shares of one count of judgements, adding up to 1."""
    return (isinstance(count, (int, float)) and float(count).is_integer() and count == other and count > 0
            and 0 <= lost <= won <= 1 and abs(won + lost - 1) < 1e-12)
