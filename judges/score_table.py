"""A study's judge scores as one typed Parquet table (the Python client's DataFrame)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.models import Study
from judges.models import JudgeScore

SCORE_SCHEMA = pa.schema([
    ("run", pa.int64()), ("judge", pa.string()), ("model", pa.string()), ("method", pa.string()),
    ("run_status", pa.string()), ("item", pa.string()), ("output", pa.int32()), ("system", pa.string()),
    ("criterion", pa.string()), ("value", pa.string()), ("score", pa.float64()), ("status", pa.string()),
    ("reasoning", pa.string()), ("tokens_in", pa.int64()), ("tokens_out", pa.int64()), ("cost_usd", pa.float64()),
    ("created_at", pa.timestamp("us", tz="UTC")),
])
FIELDS = ("run_id", "run__config", "run__status", "item__external_id", "output__position", "output__system",
          "criterion", "value", "score", "status", "reasoning", "tokens_in", "tokens_out", "cost_usd", "created_at")


def study_scores_parquet(study: Study) -> bytes:
    """Every judge score of every run of the study, one row per (run, item, output, criterion);
    `value` is the parsed answer as JSON text, `score` its number when it has one; item-level
    answers (a pairwise verdict) have no output."""
    rows = (JudgeScore.objects.filter(run__study=study).order_by("run_id", "item_id", "output__position", "criterion")
            .values_list(*FIELDS).iterator(chunk_size=5000))
    columns: dict[str, list] = {name: [] for name in SCORE_SCHEMA.names}
    for (run, config, run_status, item, output, system, criterion, value, score, status, reasoning,
         tokens_in, tokens_out, cost, created) in rows:
        for name, v in (("run", run), ("judge", config.get("name")), ("model", config.get("model")),
                        ("method", config.get("method")), ("run_status", run_status), ("item", item),
                        ("output", output), ("system", system), ("criterion", criterion),
                        ("value", None if value is None else json.dumps(value)), ("score", score),
                        ("status", status), ("reasoning", reasoning), ("tokens_in", tokens_in),
                        ("tokens_out", tokens_out), ("cost_usd", cost), ("created_at", created)):
            columns[name].append(v)
    buf = io.BytesIO()
    pq.write_table(pa.table(columns, schema=SCORE_SCHEMA), buf, compression="zstd")
    return buf.getvalue()
