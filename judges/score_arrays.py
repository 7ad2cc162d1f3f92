"""A study's judge answers and outputs as arrays, for report sections over millions of outputs.

Read by PostgreSQL's COPY into Arrow (annotation.reports.ratings.arrow_batches), as the ratings
are: a Django row per answer, and a JSON parse of its detail, took most of "Trusting the judges"
at a million ratings. An output is one int64 `unit`, (item id) * 4096 + (position + 1), as
annotation.reports.study keys it (0 for an item-level answer).

The judge's stated distribution over answers (judges.methods: G-Eval's `distribution`, or the
`samples` or `counts` of self-consistency; the first present, as `answer_distribution` takes
them) comes back in long form, one row per (answer, stated answer), so the calibration is
computed with arrays (annotation.stats.calibration.calibration_arrays).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from annotation.models import Item, Output, Study
from annotation.reports.rating_sql import arrow_batches
from judges.models import JudgeRun, JudgeScore

UNIT_BASE = 4096

_SCORES = pa.schema([("row", pa.int64()), ("run_id", pa.int64()), ("unit", pa.int64()), ("criterion", pa.string()),
                     ("score", pa.float64())])
_STATED = pa.schema([("row", pa.int64()), ("answer", pa.string()), ("weight", pa.float64())])
_OUTPUTS = pa.schema([("unit", pa.int64()), ("system", pa.string()), ("words", pa.int64()), ("family", pa.string())])

# A sample's answer as text, as Python's str(int(s)) if s is whole else str(s) (4, 4.0 and "4" are "4").
_SAMPLE_TEXT = ("CASE WHEN jsonb_typeof(x) = 'number' AND (x::text)::float8 = trunc((x::text)::float8)"
                " THEN trunc((x::text)::float8)::bigint::text"
                " WHEN jsonb_typeof(x) = 'number' THEN ((x::text)::float8)::text ELSE x #>> '{}' END")
_HAS = {"distribution": "(jsonb_typeof(s.detail -> 'distribution') = 'object' AND s.detail -> 'distribution' <> '{}')",
        "samples": "(jsonb_typeof(s.detail -> 'samples') = 'array' AND s.detail -> 'samples' <> '[]')"}


def _table(sql: str, params: list, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches(list(arrow_batches(sql, params, schema)), schema=schema)


def _where(runs: Sequence[JudgeRun], criteria: Sequence[str]) -> tuple[str, list]:
    return ("s.run_id = ANY(%s) AND s.status = %s AND s.criterion = ANY(%s)",
            [[r.pk for r in runs], JudgeScore.Status.SCORED, list(criteria)])


def scored(runs: Sequence[JudgeRun], criteria: Sequence[str], *, values: bool = False) -> pd.DataFrame:
    """The runs' scored answers on `criteria`: row (the answer's id), run_id, unit, criterion, score
    (NaN where the answer has none), and with `values` the answer's value as JSON text, sorted by
    (run, criterion, unit)."""
    where, params = _where(runs, criteria)
    schema = _SCORES.append(pa.field("value", pa.string())) if values else _SCORES
    sql = (f"SELECT s.id, s.run_id, s.item_id::bigint * {UNIT_BASE} + COALESCE(o.position + 1, 0), s.criterion,"
           f" s.score{', s.value::text' if values else ''} FROM {JudgeScore._meta.db_table} s"
           f" LEFT JOIN {Output._meta.db_table} o ON o.id = s.output_id WHERE {where}")
    df = _table(sql, params, schema).to_pandas()
    return df.sort_values(["run_id", "criterion", "unit"], kind="stable", ignore_index=True)


def stated(runs: Sequence[JudgeRun], criteria: Sequence[str]) -> pd.DataFrame:
    """The distributions the answers state: row (the answer's id), answer (as text), weight (a
    probability, or a count of samples), one row per distinct answer of each distribution. One pass
    over the answers per form: a single pass with the three forms side by side per answer took four
    times as long in PostgreSQL."""
    where, params = _where(runs, criteria)
    table = JudgeScore._meta.db_table
    sql = (
        f"SELECT s.id, e.key, e.value::float8 FROM {table} s, jsonb_each_text(s.detail -> 'distribution') e"
        f" WHERE {where} AND jsonb_typeof(s.detail -> 'distribution') = 'object'"
        f" UNION ALL SELECT s.id, {_SAMPLE_TEXT}, count(*)::float8"
        f" FROM {table} s, jsonb_array_elements(s.detail -> 'samples') x"
        f" WHERE {where} AND jsonb_typeof(s.detail -> 'samples') = 'array' AND {_HAS['distribution']} IS NOT TRUE"
        " GROUP BY 1, 2"
        f" UNION ALL SELECT s.id, e.key, e.value::float8 FROM {table} s, jsonb_each_text(s.detail -> 'counts') e"
        f" WHERE {where} AND jsonb_typeof(s.detail -> 'counts') = 'object' AND {_HAS['distribution']} IS NOT TRUE"
        f" AND {_HAS['samples']} IS NOT TRUE")
    return _table(sql, params * 3, _STATED).to_pandas()


def outputs(study: Study) -> pd.DataFrame:
    """The study's outputs: unit, system ("" when none), words in the output, its model family from
    the metadata (lower case, "" when none), sorted by unit."""
    sql = (f"SELECT o.item_id::bigint * {UNIT_BASE} + o.position + 1, COALESCE(o.system, ''),"
           " COALESCE(array_length(regexp_split_to_array(btrim(o.content), '\\s+'), 1), 0),"
           " lower(COALESCE(o.metadata ->> 'family', ''))"
           f" FROM {Output._meta.db_table} o JOIN {Item._meta.db_table} i ON i.id = o.item_id WHERE i.study_id = %s")
    df = _table(sql, [study.pk], _OUTPUTS).to_pandas()
    for column in ("system", "family"):  # COPY's CSV writes '' as "" but arrow may read an empty field as null
        df[column] = df[column].fillna("")
    return df.sort_values("unit", ignore_index=True)


def units_of(item_ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The unit of each (item id, output position; -1 for the item itself)."""
    return item_ids.astype(np.int64) * UNIT_BASE + (positions.astype(np.int64) + 1)
