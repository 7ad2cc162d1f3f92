"""The statistics' rows of a study (ratings.STATS_SCHEMA) read as ids, named here.

PostgreSQL reads each rating with its assignment only: ids, the criterion, the score, the value
as text, the time on task, the permutation and the attention flag. The item's external id and
gold answer, the output's position and system and the place at which the output was shown are
looked up in Arrow from small per-study tables (as long_arrow does for the exports). Joining
items, outputs and the unpacked permutation in SQL and writing their text for every rating was
most of the database's work per row of the report's read; at ten million ratings the read is
the report's largest single cost. The rows are those of the joined query, with the same types.

On several connections each assignment range is read as long_arrow reads it for the exports: its
assignments once each, then their ratings alone (walking rating_unique), joined in Arrow on the
worker thread. Writing every rating's assignment columns (the permutation as JSON text above all)
and looking each assignment up per range was a third of PostgreSQL's time for this read (1.05 ->
0.69 s for 500,000 ratings). The rows come in the order the joined query gives them here (by
assignment, then rating_unique's order).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Assignment, Study
from annotation.reports import parallel_copy
from annotation.reports.rating_ids import Lookup, Reader, range_job, read_here, reader_on, shown_positions_coded
from annotation.reports.rating_sql import (
    ASSIGNMENTS as _A, ITEMS as _I, OUTPUTS as _O, RATINGS as _R, VALUE_TEXT, arrow_batches, range_parts, range_where,
)

# Compact numeric view for statistics: ids instead of names, no free text; the items' names and
# gold answers as codes into the study's few (or per-item) distinct texts.
_CODED_TEXT = pa.dictionary(pa.int32(), pa.string())
STATS_SCHEMA = pa.schema([
    ("item_id", pa.int64()), ("item", _CODED_TEXT), ("output", pa.int16()), ("system", pa.string()),
    ("rater_id", pa.int64()), ("criterion", pa.string()), ("score", pa.float64()), ("label", pa.string()),
    ("seconds", pa.float64()), ("shown_position", pa.int16()), ("is_attention_check", pa.bool_()),
    ("gold", _CODED_TEXT),
])

_ID_SCHEMA = pa.schema([
    ("item_id", pa.int64()), ("output_id", pa.int64()), ("rater_id", pa.int64()), ("criterion", pa.string()),
    ("score", pa.float64()), ("label", pa.string()), ("time_on_task_ms", pa.int64()), ("permutation", pa.string()),
    ("is_attention_check", pa.bool_()),
])
_GOLD_SCHEMA = pa.schema([("item_id", pa.int64()), ("criterion", pa.string()), ("gold", pa.string())])


def _ids_sql(study: Study, criteria: Sequence[str], *, item_range=None, id_range=None) -> tuple[str, list]:
    params: list = [study.pk, Assignment.Status.SUBMITTED, list(criteria)]
    where = range_where(params, item_range=item_range, id_range=id_range)
    return (f"SELECT a.item_id, r.output_id, a.rater_id, r.criterion, r.score, {VALUE_TEXT}, a.time_on_task_ms,"
            f" a.permutation::text, a.is_attention_check FROM {_A} a JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE a.study_id = %s AND a.status = %s AND NOT a.ignored AND r.criterion = ANY(%s){where}"
            # The order the ranges' reads give too: ICC1 counts each output's first k ratings as stored.
            " ORDER BY a.id, r.output_id, r.criterion"), params


def _gold(study: Study, criteria: Sequence[str], item_range, read: Reader = read_here) -> pa.Table:
    """(item_id, criterion, gold as text) for the items that hold a gold answer of a criterion read:
    `i.gold -> criterion #>> '{}'` of the joined query, for the few items that have one."""
    params: list = [study.pk, list(criteria)]
    where = ""
    if item_range is not None:
        where = " AND i.id >= %s AND i.id < %s"
        params += list(item_range)
    sql = (f"SELECT i.id, g.key, g.value #>> '{{}}' FROM {_I} i, jsonb_each(i.gold) g"
           f" WHERE i.study_id = %s AND jsonb_typeof(i.gold) = 'object' AND g.key = ANY(%s){where}")
    return read(sql, params, _GOLD_SCHEMA)


class _Names:
    """What stats_table looks up per row: items' external ids, outputs' systems and positions, gold
    answers; `read` reads a query into a table (default: on Django's connection)."""

    def __init__(self, study: Study, criteria: Sequence[str], item_range=None, read: Reader = read_here):
        self.items = Lookup(f"SELECT id, external_id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk],
                             read=read)
        self.outputs = Lookup(f"SELECT o.id, o.system, o.position FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                               " WHERE i.study_id = %s ORDER BY o.id", [study.pk], extra=pa.int16(), read=read)
        self.gold = _gold(study, criteria, item_range, read)


def _gold_column(ids: pa.Table, gold: pa.Table) -> pa.DictionaryArray:
    """Each row's gold text for its (item, criterion), null where the item has none, as codes into
    the distinct gold texts."""
    if gold.num_rows == 0:
        return pa.DictionaryArray.from_arrays(pa.nulls(ids.num_rows, pa.int32()), pa.array([], pa.string()))
    crit = pc.index_in(ids["criterion"], value_set=pc.unique(gold["criterion"]))
    gold_crit = pc.index_in(gold["criterion"], value_set=pc.unique(gold["criterion"]))
    n_crit = len(pc.unique(gold["criterion"]))
    row_key = (ids["item_id"].to_numpy() * n_crit + crit.fill_null(-1).to_numpy(zero_copy_only=False))
    gold_key = gold["item_id"].to_numpy() * n_crit + gold_crit.to_numpy(zero_copy_only=False)
    order = np.argsort(gold_key, kind="stable")
    sorted_keys = gold_key[order]
    at = np.minimum(np.searchsorted(sorted_keys, row_key), sorted_keys.size - 1)
    hit = (sorted_keys[at] == row_key) & crit.is_valid().to_numpy(zero_copy_only=False)
    texts = gold["gold"].combine_chunks().dictionary_encode()  # (a null gold value stays null)
    codes = pc.take(pc.cast(texts.indices, pa.int32()), pa.array(order[at], pa.int64(), mask=~hit))
    return pa.DictionaryArray.from_arrays(codes, texts.dictionary)


# The range reads' columns (long_arrow's form): a rating's own, then its assignment's.
_RANGE_COLUMNS = (
    ("output_id", "r.output_id", pa.int64()),
    ("criterion", "r.criterion", pa.string()),
    ("score", "r.score", pa.float64()),
    ("label", VALUE_TEXT, pa.string()),
    ("item_id", "a.item_id", pa.int64()),
    ("rater_id", "a.rater_id", pa.int64()),
    ("time_on_task_ms", "a.time_on_task_ms", pa.int64()),
    ("permutation", "a.permutation::text", pa.string()),
    ("is_attention_check", "a.is_attention_check", pa.bool_()),
    ("ignored", "a.ignored", pa.bool_()),
)
_RANGE_ROWS = [name for name in _ID_SCHEMA.names if name != "permutation"]


def _range_job(study: Study, criteria: Sequence[str], id_range: tuple[int, int]) -> parallel_copy.Job:
    """One assignment range's rows (_ID_SCHEMA, the permutation as a code into the range's own list
    of permutations' texts), as _ids_sql gives them for the range."""
    return range_job(study, id_range, _RANGE_COLUMNS,
                     combine=lambda ratings, assignments: _range_rows(ratings, assignments, criteria))


def _range_rows(ratings: pa.Table, assignments: pa.Table, criteria: Sequence[str]) -> tuple[pa.Table, list[str]]:
    """The inner join of ratings (sorted by assignment id, other assignments' among them) with the
    range's assignments, less ignored assignments and other criteria."""
    ids = assignments["assignment_id"].to_numpy()
    wanted = ratings["assignment_id"].to_numpy()
    at = np.minimum(np.searchsorted(ids, wanted), max(len(ids) - 1, 0))
    keep = (ids[at] == wanted) if len(ids) else np.zeros(len(wanted), dtype=bool)
    if len(ids):
        keep &= ~assignments["ignored"].to_numpy()[at]
    keep &= pc.is_in(ratings["criterion"], value_set=pa.array(list(criteria), pa.string())).to_numpy(
        zero_copy_only=False)
    ratings, at = ratings.filter(pa.array(keep)), pa.array(at[keep])
    permutations = assignments["permutation"].combine_chunks().dictionary_encode()
    columns = {name: ratings[name] for name in ratings.column_names}
    columns.update({name: pc.take(assignments[name], at) for name in _RANGE_ROWS if name not in columns})
    columns["permutation"] = pc.take(permutations.indices, at)
    rows = pa.table({name: columns[name] for name in _RANGE_ROWS + ["permutation"]})
    return rows, permutations.dictionary.to_pylist()


def _read_ranges(study: Study, criteria: Sequence[str], parts: list) -> tuple[_Names, pa.Table, np.ndarray, list[str]]:
    """The names, and the rows of every range in order, each row's permutation as a code into one list of
    texts. The names are the first job on the same snapshot: read beside the first range, not after the last."""
    results = parallel_copy.run_in_parallel([lambda conn: _Names(study, criteria, read=reader_on(conn))]
                                            + [_range_job(study, criteria, r) for r in parts])
    names = next(results)
    tables, codes, texts = [], [], {}
    for table, range_texts in results:
        tables.append(table)
        to_code = np.array([texts.setdefault(t, len(texts)) for t in range_texts] or [0], dtype=np.int64)
        codes.append(to_code[table["permutation"].fill_null(0).to_numpy(zero_copy_only=False)])
    rows = pa.concat_tables(tables) if tables else pa.table({n: pa.array([], _ID_SCHEMA.field(n).type)
                                                               for n in _RANGE_ROWS + ["permutation"]})
    return names, rows, np.concatenate(codes) if codes else np.zeros(0, np.int64), list(texts)


def stats_table(study: Study, criteria: Sequence[str], *, item_range: tuple[int, int] | None = None) -> pa.Table:
    """ratings.stats_frame's rows as an Arrow table of STATS_SCHEMA (before its categoricals)."""
    def build(id_range=None):
        return _ids_sql(study, criteria, item_range=item_range, id_range=id_range)

    parts = None if item_range is not None else range_parts(study, lambda r=None: r)
    if parts is None:  # one query on this connection
        ids = pa.Table.from_batches(list(arrow_batches(*build(), _ID_SCHEMA)), schema=_ID_SCHEMA)
        encoded = ids["permutation"].combine_chunks().dictionary_encode()
        which, texts = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()
        # The names are read once the rows' snapshot is taken, so they know every id it holds.
        names = _Names(study, criteria, item_range)
    else:
        names, ids, which, texts = _read_ranges(study, criteria, parts)
    items, outputs = names.items, names.outputs
    output = outputs.index(ids["output_id"])
    position = pc.take(outputs.extra, output)
    seconds = pc.divide(pc.cast(ids["time_on_task_ms"], pa.float64()), 1000.0)
    columns = {
        "item_id": ids["item_id"],
        # Codes into the study's names (unique in a study): ten million names as text were the frame's
        # largest column, copied whole by every selection of rows.
        "item": pa.DictionaryArray.from_arrays(pc.cast(items.index(ids["item_id"]), pa.int32()), items.names),
        "output": pc.fill_null(position, -1),
        "system": pc.take(outputs.names, output),
        "rater_id": ids["rater_id"],
        "criterion": ids["criterion"],
        "score": ids["score"],
        "label": ids["label"],
        "seconds": seconds,
        "shown_position": shown_positions_coded(texts, which, position),
        "is_attention_check": ids["is_attention_check"],
        "gold": _gold_column(ids, names.gold),
    }
    return pa.Table.from_arrays([columns[f.name] for f in STATS_SCHEMA], schema=STATS_SCHEMA)
