"""The statistics' rows of a study (ratings.STATS_SCHEMA) read as ids, named here.

PostgreSQL reads each rating with its assignment only: ids, the criterion, the score, the value
as text, the time on task, the permutation and the attention flag. The item's external id and
gold answer, the output's position and system and the place at which the output was shown are
looked up in Arrow from small per-study tables (as long_arrow does for the exports). Joining
items, outputs and the unpacked permutation in SQL and writing their text for every rating was
most of the database's work per row of the report's read; at ten million ratings the read is
the report's largest single cost. The rows are those of the joined query, with the same types.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Assignment, Study
from annotation.reports.long_arrow import _Lookup, shown_positions
from annotation.reports.ratings import (_A, _I, _O, _R, _VALUE_TEXT, STATS_SCHEMA, _long_parts, _range_where,
                                        arrow_batches, arrow_parts)

_ID_SCHEMA = pa.schema([
    ("item_id", pa.int64()), ("output_id", pa.int64()), ("rater_id", pa.int64()), ("criterion", pa.string()),
    ("score", pa.float64()), ("label", pa.string()), ("time_on_task_ms", pa.int64()), ("permutation", pa.string()),
    ("is_attention_check", pa.bool_()),
])
_GOLD_SCHEMA = pa.schema([("item_id", pa.int64()), ("criterion", pa.string()), ("gold", pa.string())])


def _ids_sql(study: Study, criteria: Sequence[str], *, item_range=None, id_range=None) -> tuple[str, list]:
    params: list = [study.pk, Assignment.Status.SUBMITTED, list(criteria)]
    where = _range_where(params, item_range=item_range, id_range=id_range)
    return (f"SELECT a.item_id, r.output_id, a.rater_id, r.criterion, r.score, {_VALUE_TEXT}, a.time_on_task_ms,"
            f" a.permutation::text, a.is_attention_check FROM {_A} a JOIN {_R} r ON r.assignment_id = a.id"
            f" WHERE a.study_id = %s AND a.status = %s AND NOT a.ignored AND r.criterion = ANY(%s){where}"), params


def _gold(study: Study, criteria: Sequence[str], item_range) -> pa.Table:
    """(item_id, criterion, gold as text) for the items that hold a gold answer of a criterion read:
    `i.gold -> criterion #>> '{}'` of the joined query, for the few items that have one."""
    params: list = [study.pk, list(criteria)]
    where = ""
    if item_range is not None:
        where = " AND i.id >= %s AND i.id < %s"
        params += list(item_range)
    sql = (f"SELECT i.id, g.key, g.value #>> '{{}}' FROM {_I} i, jsonb_each(i.gold) g"
           f" WHERE i.study_id = %s AND jsonb_typeof(i.gold) = 'object' AND g.key = ANY(%s){where}")
    return pa.Table.from_batches(list(arrow_batches(sql, params, _GOLD_SCHEMA)), schema=_GOLD_SCHEMA)


def _gold_column(ids: pa.Table, gold: pa.Table) -> pa.Array:
    """Each row's gold text for its (item, criterion), null where the item has none."""
    if gold.num_rows == 0:
        return pa.nulls(ids.num_rows, pa.string())
    crit = pc.index_in(ids["criterion"], value_set=pc.unique(gold["criterion"]))
    gold_crit = pc.index_in(gold["criterion"], value_set=pc.unique(gold["criterion"]))
    n_crit = len(pc.unique(gold["criterion"]))
    row_key = (ids["item_id"].to_numpy() * n_crit + crit.fill_null(-1).to_numpy(zero_copy_only=False))
    gold_key = gold["item_id"].to_numpy() * n_crit + gold_crit.to_numpy(zero_copy_only=False)
    order = np.argsort(gold_key, kind="stable")
    sorted_keys = gold_key[order]
    at = np.minimum(np.searchsorted(sorted_keys, row_key), sorted_keys.size - 1)
    hit = (sorted_keys[at] == row_key) & crit.is_valid().to_numpy(zero_copy_only=False)
    return pc.take(gold["gold"].combine_chunks(), pa.array(order[at], pa.int64(), mask=~hit))


def stats_table(study: Study, criteria: Sequence[str], *, item_range: tuple[int, int] | None = None) -> pa.Table:
    """ratings.stats_frame's rows as an Arrow table of STATS_SCHEMA (before its categoricals)."""
    def build(id_range=None):
        return _ids_sql(study, criteria, item_range=item_range, id_range=id_range)

    parts = None if item_range is not None else _long_parts(study, build)
    batches = arrow_batches(*build(), _ID_SCHEMA) if parts is None else arrow_parts(parts, _ID_SCHEMA)
    ids = pa.Table.from_batches(list(batches), schema=_ID_SCHEMA)
    # The names are read once the rows' snapshot is taken, so they know every id it holds.
    items = _Lookup(f"SELECT id, external_id FROM {_I} WHERE study_id = %s ORDER BY id", [study.pk])
    outputs = _Lookup(f"SELECT o.id, o.system, o.position FROM {_O} o JOIN {_I} i ON i.id = o.item_id"
                      " WHERE i.study_id = %s ORDER BY o.id", [study.pk], extra=pa.int16())
    output = outputs.index(ids["output_id"])
    position = pc.take(outputs.extra, output)
    seconds = pc.divide(pc.cast(ids["time_on_task_ms"], pa.float64()), 1000.0)
    columns = {
        "item_id": ids["item_id"],
        "item": pc.take(items.names, items.index(ids["item_id"])),
        "output": pc.fill_null(position, -1),
        "system": pc.take(outputs.names, output),
        "rater_id": ids["rater_id"],
        "criterion": ids["criterion"],
        "score": ids["score"],
        "label": ids["label"],
        "seconds": seconds,
        "shown_position": shown_positions(ids["permutation"], position),
        "is_attention_check": ids["is_attention_check"],
        "gold": _gold_column(ids, _gold(study, criteria, item_range)),
    }
    return pa.Table.from_arrays([columns[f.name] for f in STATS_SCHEMA], schema=STATS_SCHEMA)
