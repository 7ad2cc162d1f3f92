"""A pairwise judgements file (item,rater,system_a,system_b,winner) read into integer codes and summed
into the win matrix, as the report's Comparisons section sums a study's answers
(annotation.reports.pairwise_sums): no Python object per judgement, so five million lines take
seconds. pyarrow reads the file; the checks run on whole columns and name the first bad line and
its column, with the messages of the line-by-line reader. A file pyarrow cannot read as a clean
table (a long row, bad UTF-8, broken quoting) returns None, and the caller reads it with pandas,
whose errors say which line and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from annotation.stats.tables import TableError

COLUMNS = ("item", "rater", "system_a", "system_b", "winner")


@dataclass
class PairwiseSums:
    """What the report needs of a pairwise file: the systems (sorted), wins[i, j] (i's wins over j,
    a tie half each way) and, for the position effect, the decided judgements and those the first
    shown won."""

    systems: list[str]
    wins: np.ndarray
    decided: int
    first_wins: int


def _table(path: str | Path) -> pa.Table | None:
    try:
        table = pacsv.read_csv(str(path), convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in COLUMNS}, strings_can_be_null=False))
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError):
        return None
    table = table.rename_columns([c.strip() for c in table.column_names])
    if not set(COLUMNS) <= set(table.column_names):
        return None
    return table


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _codes(column: pa.ChunkedArray, index: pd.Index) -> np.ndarray:
    """Each value's position in index (-1 where absent), through the column's dictionary."""
    encoded = column.combine_chunks().dictionary_encode()
    lookup = index.get_indexer(encoded.dictionary.to_pylist())
    return lookup[encoded.indices.to_numpy(zero_copy_only=False)]


def read_pairwise_sums(path: str | Path) -> PairwiseSums | None:
    """The file's sums, or None when pyarrow cannot read it (see the module's note)."""
    table = _table(path)
    if table is None:
        return None
    cols = {c: pc.utf8_trim_whitespace(table[c]) for c in COLUMNS}
    for c in COLUMNS:  # in the header's order of the kinds, as read_table checks them
        empty = _first(pc.equal(pc.utf8_length(cols[c]), 0).to_numpy(zero_copy_only=False))
        if empty is not None:
            raise TableError("empty value", row=empty + 2, column=c)
    names = pc.unique(pa.chunked_array(cols["system_a"].chunks + cols["system_b"].chunks, type=pa.string())).to_pylist()
    systems = sorted(names)  # Python's order, as cmp.win_matrix sorts
    index = pd.Index(systems)
    a, b, w = (_codes(cols[c], index) for c in ("system_a", "system_b", "winner"))
    tie = pc.equal(cols["winner"], "tie").to_numpy(zero_copy_only=False)
    same = _first(a == b)
    odd = _first(~tie & (w != a) & (w != b))
    if same is not None and (odd is None or same <= odd):
        raise TableError(f"a system compared with itself ({systems[a[same]]!r})", row=same + 2, column="system_b")
    if odd is not None:
        first, second, winner = (cols[c][odd].as_py() for c in ("system_a", "system_b", "winner"))
        raise TableError(f"{winner!r} is neither {first!r}, {second!r} nor 'tie'", row=odd + 2, column="winner")
    k = len(systems)
    loser = np.where(w == a, b, a)
    cells = np.concatenate([(w * k + loser)[~tie], (a * k + b)[tie], (b * k + a)[tie]])
    weights = np.concatenate([np.ones(int((~tie).sum())), np.full(2 * int(tie.sum()), 0.5)])
    wins = np.bincount(cells, weights=weights, minlength=k * k).reshape(k, k)
    return PairwiseSums(systems, wins, decided=int((~tie).sum()), first_wins=int((~tie & (w == a)).sum()))
