"""A pairwise judgements file (item,rater,system_a,system_b,winner) read into integer codes and summed
into the win matrix, as the report's Comparisons section sums a study's answers
(annotation.reports.pairwise_sums): no Python object per judgement, so five million lines take
seconds. pyarrow reads the file; the checks run on whole columns and name the first bad line and
its column, with the messages of the line-by-line reader. A file pyarrow cannot read as a clean
table (a long row, bad UTF-8, broken quoting, a name quoted after a space) returns None, and the
caller reads it with pandas, whose errors say which line and why.
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
NAMES = ("system_a", "system_b", "winner")  # read as dictionaries: a few hundred names, codes per line


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
            column_types={c: pa.dictionary(pa.int32(), pa.string()) if c in NAMES else pa.string() for c in COLUMNS},
            strings_can_be_null=False))
    except (pa.ArrowException, OSError, UnicodeDecodeError):
        return None
    table = table.rename_columns([c.strip() for c in table.column_names])
    if not set(COLUMNS) <= set(table.column_names):
        return None
    return table.unify_dictionaries()  # one dictionary for every chunk of a column


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _blank(column: pa.ChunkedArray) -> np.ndarray:
    """Empty or only spaces, without making a trimmed copy of every value."""
    return pc.or_(pc.equal(pc.utf8_length(column), 0), pc.utf8_is_space(column)).to_numpy(zero_copy_only=False)


def _encoded(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """A dictionary column's codes and its values stripped by Python, as the line-by-line reader strips."""
    if not column.num_chunks:
        return np.zeros(0, dtype=np.int64), []
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in column.chunks]).astype(np.int64)
    return codes, [v.strip() for v in column.chunks[0].dictionary.to_pylist()]


def read_pairwise_sums(path: str | Path) -> PairwiseSums | None:
    """The file's sums, or None when pyarrow cannot read it (see the module's note)."""
    table = _table(path)
    if table is None:
        return None
    encoded = {c: _encoded(table[c]) for c in NAMES}
    if any('"' in v for _, values in encoded.values() for v in values):
        return None  # a quote after a space (`a, "b c"`): pandas skips the space and unquotes, pyarrow keeps both
    for c in COLUMNS:  # in the header's order of the kinds, as read_table checks them
        if c in NAMES:
            codes, values = encoded[c]
            blank = np.array([v == "" for v in values], dtype=bool)[codes]
        else:
            blank = _blank(table[c])
        empty = _first(blank)
        if empty is not None:
            raise TableError("empty value", row=empty + 2, column=c)
    (ia, da), (ib, db), (iw, dw) = (encoded[c] for c in NAMES)
    systems = sorted(set(da) | set(db))  # Python's order, as cmp.win_matrix sorts
    index = pd.Index(systems)
    a, b = index.get_indexer(da)[ia], index.get_indexer(db)[ib]
    w = index.get_indexer(dw)[iw]
    tie = np.array([v == "tie" for v in dw], dtype=bool)[iw]
    same = _first(a == b)
    odd = _first(~tie & (w != a) & (w != b))
    if same is not None and (odd is None or same <= odd):
        raise TableError(f"a system compared with itself ({systems[a[same]]!r})", row=same + 2, column="system_b")
    if odd is not None:
        first, second, winner = da[ia[odd]], db[ib[odd]], dw[iw[odd]]
        raise TableError(f"{winner!r} is neither {first!r}, {second!r} nor 'tie'", row=odd + 2, column="winner")
    k = len(systems)
    loser = np.where(w == a, b, a)
    cells = np.concatenate([(w * k + loser)[~tie], (a * k + b)[tie], (b * k + a)[tie]])
    weights = np.concatenate([np.ones(int((~tie).sum())), np.full(2 * int(tie.sum()), 0.5)])
    wins = np.bincount(cells, weights=weights, minlength=k * k).reshape(k, k)
    return PairwiseSums(systems, wins, decided=int((~tie).sum()), first_wins=int((~tie & (w == a)).sum()))
