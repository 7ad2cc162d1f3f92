"""A study's comparative answers as one typed Arrow table (the Python client's DataFrame)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.models import Study
from annotation.reports.comparisons import comparative_answers

COMPARISON_SCHEMA = pa.schema([
    ("item", pa.string()), ("rater", pa.string()), ("criterion", pa.string()), ("kind", pa.string()),
    ("shown", pa.list_(pa.string())), ("positions", pa.list_(pa.int32())), ("winner", pa.string()),
    ("ranks", pa.list_(pa.int32())), ("best", pa.string()), ("worst", pa.string()),
])


def comparisons_parquet(study: Study) -> bytes:
    """Every submitted comparative answer (pairwise, ranking, best–worst), systems by name, in the
    order shown; the same answers the report's Comparisons section counts."""
    answers = comparative_answers(study)
    columns = {
        "item": [a.item for a in answers], "rater": [a.rater for a in answers],
        "criterion": [a.criterion for a in answers], "kind": [a.kind for a in answers],
        "shown": [list(a.shown) for a in answers], "positions": [list(a.positions) for a in answers],
        "winner": [a.winner for a in answers], "ranks": [list(a.ranks) or None for a in answers],
        "best": [a.best for a in answers], "worst": [a.worst for a in answers],
    }
    buf = io.BytesIO()
    pq.write_table(pa.table(columns, schema=COMPARISON_SCHEMA), buf, compression="zstd")
    return buf.getvalue()
