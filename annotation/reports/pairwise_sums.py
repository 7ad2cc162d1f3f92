"""A study's pairwise answers summed in bulk, for the report's Comparisons section at arena scale.

    pairwise_sums(study, keys) -> {key: PairwiseSums | None}
    answers_by_system, summable, sums_with_ids          # its steps, on any table of the read's rows
                                                        # (annotation.reports.pairwise_blocks: per block)

The statistics of pairwise judgements need only sums: the win matrix (Bradley–Terry, win rates),
how often the first shown won among the decided ones (position bias) and the distinct raters and
items. So the answers are read with COPY into Arrow as numbers (the shown output ids, the winner's
id or a tie), mapped to systems with numpy and summed with bincount: no Python object per answer.

The answers kept are those annotation.reports.comparisons.comparative_answers keeps (submitted, not
ignored, not an attention check, item-level, both shown ids and the winner outputs of the items
read, or a tie); the pairs are those of annotation.stats.comparisons.pairs_from_pairwise. A
criterion whose stored answers do not all show exactly two outputs (never written so) gets None:
the caller then takes the answer-by-answer path, which reads whatever was stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from annotation.models import Assignment, Study
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, ITEMS as _I, OUTPUTS as _O, RATINGS as _R, arrow_batches, arrow_parts, range_parts, range_where,
)

ANSWER_SCHEMA = pa.schema([
    ("criterion", pa.string()), ("item_id", pa.int64()), ("rater_id", pa.int64()),
    ("first", pa.float64()), ("second", pa.float64()), ("winner", pa.float64()), ("tie", pa.bool_()),
    ("n_shown", pa.int32()),
])
_OUTPUTS = pa.schema([("id", pa.int64()), ("item_id", pa.int64()), ("system", pa.string())])


def _number(path: str) -> str:
    """A JSON number at `path` of the value as float8 (ids are far below 2**53), else NULL: a
    string "12" is not the output 12 (comparative_answers looks ids up as they were stored)."""
    return f"CASE WHEN jsonb_typeof(r.value {path}) = 'number' THEN (r.value {path})::text::float8 END"


_FIRST, _SECOND, _WINNER = _number("-> 'shown' -> 0"), _number("-> 'shown' -> 1"), _number("-> 'winner'")


@dataclass
class PairwiseSums:
    systems: list[str]
    wins: np.ndarray  # wins[i, j]: i's wins over j, ties half each way
    n_answers: int
    n_raters: int
    n_items: int
    first_wins: int  # decided answers that the output shown first won
    decided: int


def answers_from(study: Study, keys: Sequence[str], id_range: tuple[int, int] | None = None) -> tuple[str, list]:
    """FROM and WHERE of the answers read (the rows pairwise_blocks fingerprints, too)."""
    params: list = [study.pk, Assignment.Status.SUBMITTED, list(keys)]
    where = range_where(params, id_range=id_range)
    if id_range is not None:
        # The same range on the ratings' side: the filters on r.value look rare to the planner,
        # which then scanned every rating of the table for each range (20 ranges, 20 scans).
        where += " AND r.assignment_id >= %s AND r.assignment_id < %s"
        params += list(id_range)
    return (f" FROM {_A} a JOIN {_R} r ON r.assignment_id = a.id"
            " WHERE a.study_id = %s AND a.status = %s AND NOT a.ignored AND NOT a.is_attention_check"
            f" AND r.output_id IS NULL AND r.criterion = ANY(%s) AND jsonb_typeof(r.value) = 'object'{where}"), params


ANSWER_COLUMNS = (f"r.criterion, a.item_id, a.rater_id, {_FIRST}, {_SECOND}, {_WINNER},"
            " r.value -> 'winner' = '\"tie\"'::jsonb,"
            " CASE WHEN jsonb_typeof(r.value -> 'shown') = 'array' THEN jsonb_array_length(r.value -> 'shown') END")


def _answers_sql(study: Study, keys: Sequence[str], id_range: tuple[int, int] | None = None) -> tuple[str, list]:
    body, params = answers_from(study, keys, id_range)
    return f"SELECT {ANSWER_COLUMNS}{body}", params


def _read(study: Study, keys: Sequence[str]) -> pa.Table:
    parts = range_parts(study, lambda r=None: _answers_sql(study, keys, r))
    if parts is None:
        batches = arrow_batches(*_answers_sql(study, keys), ANSWER_SCHEMA)
    else:
        batches = arrow_parts(parts, ANSWER_SCHEMA)
    return pa.Table.from_batches(list(batches), schema=ANSWER_SCHEMA)


def _outputs(study: Study) -> pa.Table:
    sql = (f"SELECT o.id, o.item_id, o.system FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
           " WHERE i.study_id = %s ORDER BY o.id")
    return pa.Table.from_batches(list(arrow_batches(sql, [study.pk], _OUTPUTS)), schema=_OUTPUTS)


def _column(table: pa.Table, name: str, fill) -> np.ndarray:
    return table[name].combine_chunks().fill_null(fill).to_numpy(zero_copy_only=False)


@dataclass
class Answers:
    """The read's rows with their shown outputs and winner as system codes (-1: no output of the
    items read), ready to be summed per criterion."""
    first: np.ndarray
    second: np.ndarray
    winner: np.ndarray
    tie: np.ndarray
    n_shown: np.ndarray
    rater: np.ndarray
    item: np.ndarray
    criterion: np.ndarray  # codes into criteria
    criteria: list[str]
    names: np.ndarray  # system name by code
    unresolved: np.ndarray  # whole-number ids that are no output of the items read (sorted, distinct)


def answers_by_system(table: pa.Table, outputs: pa.Table) -> Answers:
    """`table` (the read's rows) mapped to systems through `outputs` (id, item_id, system; in id order)."""
    item = _column(table, "item_id", 0)
    # comparative_answers looks ids up among the outputs of the items it read, so do the same.
    out_item = _column(outputs, "item_id", 0)
    known = np.isin(out_item, np.unique(item))
    out_ids = _column(outputs, "id", 0)[known]
    out_sys, names = pd.factorize(outputs["system"].to_pandas()[known].to_numpy(dtype=object))
    misses: list[np.ndarray] = []

    def system_of(ids: np.ndarray) -> np.ndarray:
        """The system code of each id, -1 where it is no output read (or not a whole number)."""
        whole = np.isfinite(ids) & (ids == np.round(ids))
        wanted = np.where(whole, ids, -1).astype(np.int64)
        at = np.minimum(np.searchsorted(out_ids, wanted), max(out_ids.size - 1, 0))
        hit = whole & (out_ids[at] == wanted) if out_ids.size else np.zeros(ids.size, bool)
        misses.append(wanted[whole & ~hit])
        return np.where(hit, out_sys[at] if out_ids.size else -1, -1)

    first = system_of(_column(table, "first", np.nan))
    second = system_of(_column(table, "second", np.nan))
    winner = system_of(_column(table, "winner", np.nan))
    criterion = table["criterion"].combine_chunks().dictionary_encode()
    return Answers(first=first, second=second, winner=winner, tie=_column(table, "tie", False).astype(bool),
                   n_shown=_column(table, "n_shown", -1), rater=_column(table, "rater_id", 0), item=item,
                   criterion=criterion.indices.to_numpy(zero_copy_only=False),
                   criteria=criterion.dictionary.to_pylist(), names=np.asarray(names, dtype=object),
                   unresolved=np.unique(np.concatenate(misses)))


def summable(answers: Answers, key: str) -> np.ndarray | None:
    """The rows of `key` that count (both shown and the winner known, or a tie), or None when
    some stored answer of it does not show exactly two outputs."""
    mine = answers.criterion == answers.criteria.index(key) if key in answers.criteria else (
        np.zeros(answers.item.size, bool))
    if (answers.n_shown[mine] != 2).any():
        return None
    return mine & (answers.first >= 0) & (answers.second >= 0) & (answers.tie | (answers.winner >= 0))


def pairwise_sums(study: Study, keys: Sequence[str]) -> dict[str, PairwiseSums | None]:
    """Per pairwise criterion key: its answers' sums (PairwiseSums), or None when some stored
    answer does not show exactly two outputs (see the module's docstring)."""
    if not keys:
        return {}
    answers = answers_by_system(_read(study, keys), _outputs(study))
    return {key: None if (ok := summable(answers, key)) is None else sums_with_ids(answers, ok)[0] for key in keys}


def _column(table: pa.Table, name: str, fill) -> np.ndarray:
    return table[name].combine_chunks().fill_null(fill).to_numpy(zero_copy_only=False)


def sums_with_ids(answers: Answers, ok: np.ndarray) -> tuple[PairwiseSums, np.ndarray, np.ndarray]:
    """The sums of the rows `ok`, with the distinct rater ids and item ids they count."""
    a, b, w, tie = answers.first[ok], answers.second[ok], answers.winner[ok], answers.tie[ok]
    raters, items = np.unique(answers.rater[ok]), np.unique(answers.item[ok])
    names = answers.names
    decided = ~tie
    used = np.unique(np.concatenate([a, b, w[decided]]))
    systems = sorted(str(names[c]) for c in used)  # bradley_terry's order: by name
    place = np.full(len(names), -1, dtype=np.int64)
    place[[list(map(str, names)).index(s) for s in systems]] = np.arange(len(systems))
    a, b, w = place[a], place[b], np.where(decided, place[np.maximum(w, 0)], -1)
    k = len(systems)
    # pairs_from_pairwise: a tie is (a, b, 0.5) and (b, a, 0.5); a win (winner, a if the winner is not a, 1).
    loser = np.where(w == a, b, a)
    cells = np.concatenate([(a * k + b)[tie], (b * k + a)[tie], (w * k + loser)[decided]])
    weights = np.concatenate([np.full(2 * int(tie.sum()), 0.5), np.ones(int(decided.sum()))])
    wins = np.bincount(cells, weights=weights, minlength=k * k).reshape(k, k) if k else np.zeros((0, 0))
    sums = PairwiseSums(systems=systems, wins=wins, n_answers=int(a.size), n_raters=int(raters.size),
                        n_items=int(items.size), first_wins=int((decided & (w == a)).sum()),
                        decided=int(decided.sum()))
    return sums, raters, items
