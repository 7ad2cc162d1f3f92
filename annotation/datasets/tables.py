"""Datasets: what an export reads, in chunks, from the study's ratings.

- the long ratings table comes straight from annotation.reports.ratings (COPY / Arrow);
- per-output scores (consensus, groups, overall and its CI, vote count) are computed per
  chunk of items, so memory stays flat however many items a study has.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from django.db import connection

from annotation.models import Assignment, Output, Study
from annotation.reports.stats import (
    add_analysis_value, consensus_frame, criterion_column, criterion_measure, group_column, majority_frame,
    min_raters_for_pairs, output_scores_frame, with_enough_raters,
)
from annotation.reports.ratings import item_id_ranges, rater_names, stats_frame
from annotation.reports.rating_sql import ASSIGNMENTS as _A, RATINGS as _R

ITEMS_PER_CHUNK = 5_000
Progress = Callable[[int], None]


def analysed(study: Study) -> tuple[list[dict], list[str], list[str]]:
    """(criteria analysed, numeric keys, categorical keys) of the study's rubric."""
    criteria = [c for c in study.rubric["criteria"] if criterion_measure(c) is not None]
    numeric = [c["key"] for c in criteria if criterion_measure(c) == "numeric"]
    categorical = [c["key"] for c in criteria if criterion_measure(c) == "categorical"]
    return criteria, numeric, categorical


def item_chunks(study: Study, *, items_per_chunk: int | None = None,
                progress: Progress | None = None) -> Iterator[tuple[pd.DataFrame, dict[str, Any]]]:
    """(ratings frame with `x` and `rater`, outputs of the chunk) per chunk of items.

    Attention-check items are left out: they test raters, they are not data.
    Outputs: {(item_id, position): {"item", "prompt", "system", "content"}}.
    """
    criteria, numeric, categorical = analysed(study)
    names = rater_names(study)
    done = 0
    for lo, hi in item_id_ranges(study, items_per_chunk=items_per_chunk or ITEMS_PER_CHUNK):
        df = stats_frame(study, numeric + categorical, item_range=(lo, hi))
        df = df[~df["is_attention_check"]]
        df = add_analysis_value(df, criteria)
        df["rater"] = df["rater_id"].map(names).astype(str)
        outputs = {
            (item_id, pos): {"item": ext, "prompt": context, "system": system, "content": content}
            for item_id, pos, system, content, ext, context in Output.objects.filter(
                item__study=study, item_id__gte=lo, item_id__lt=hi, item__is_attention_check=False)
            .order_by("item_id", "position")
            .values_list("item_id", "position", "system", "content", "item__external_id", "item__context")
            .iterator(chunk_size=2000)
        }
        yield df, outputs
        done += 1
        if progress:
            progress(done)


def output_score_rows(study: Study, df: pd.DataFrame, outputs: dict) -> list[dict[str, Any]]:
    """Rows for stats.consensus.preference_pairs: one per rated output of the chunk, with the
    computed `overall` and the score_fields (never a rubric key standing in for `overall`)."""
    _, numeric, _ = analysed(study)
    sub = df[df["criterion"].isin(numeric) & df["x"].notna() & (df["output"] >= 0)]
    if sub.empty:
        return []
    sub, _ = with_enough_raters(sub, min_raters_for_pairs(study.consensus_min_raters))
    if sub.empty:
        return []
    groups = {g["key"] for g in study.rubric.get("groups") or []}
    columns = {key: group_column(key) if key in groups else criterion_column(key) for key in score_fields(study)}
    scores = output_scores_frame(sub.assign(item=sub["item_id"]), study.rubric)
    rows = []
    for rec in scores.to_dict("records"):
        out = outputs.get((int(rec["item"]), int(rec["output"])))
        if out is None or pd.isna(rec["overall"]):
            continue
        row = {**out, "overall": float(rec["overall"]),
               "confidence_interval": None if pd.isna(rec["ci_low"]) else [float(rec["ci_low"]), float(rec["ci_high"])],
               "vote_count": int(rec["vote_count"])}
        for key, column in columns.items():
            value = rec.get(column)
            row[key] = None if value is None or pd.isna(value) else float(value)
        rows.append(row)
    return rows


def score_fields(study: Study) -> list[str]:
    """The per-output scores a preference pair carries besides overall: the rubric's groups
    (seed 002: technical, aesthetic), or else the numeric criteria the overall combines (a
    criterion rated as the overall itself, seed 000's, is not one of them)."""
    groups = [g["key"] for g in study.rubric.get("groups") or []]
    if groups:
        return groups
    combined = {c["key"] for c in study.rubric["criteria"] if not c.get("overall")}
    return [k for k in analysed(study)[1] if k in combined]


def consensus_rows(study: Study, df: pd.DataFrame, outputs: dict) -> pd.DataFrame:
    """The consensus table of one chunk (CONSENSUS_COLUMNS): level `criterion` rows keyed by
    the rubric's criteria, `group` rows by its groups, and one `overall` row (computed).
    An output rated by fewer than the study's consensus_min_raters gets one `left_out` row
    instead, its rater count in `n` (seed 002: no consensus from too few evaluators)."""
    _, numeric, categorical = analysed(study)
    names = df.drop_duplicates("item_id").set_index("item_id")["item"].astype(str)  # (a categorical in df)
    df, short = with_enough_raters(df, study.consensus_min_raters)
    frames = []
    if not short.empty:
        frames.append(short.reset_index().rename(columns={"item_id": "item", "raters": "n"}).assign(
            level="left_out", criterion=""))
    num = df[df["criterion"].isin(numeric) & df["x"].notna()].assign(item=lambda d: d["item_id"])
    if not num.empty:
        c = consensus_frame(num)
        c["level"] = "criterion"
        frames.append(c)
        scores = output_scores_frame(num, study.rubric)
        parts = [(g["key"], group_column(g["key"]), "group") for g in study.rubric.get("groups") or []]
        for key, column, level in parts + [("overall", "overall", "overall")]:
            part = scores[["item", "output", column]].rename(columns={column: "consensus"})
            part["criterion"] = key
            part["level"] = level
            if level == "overall":
                part["ci_low"], part["ci_high"] = scores["ci_low"], scores["ci_high"]
            part["n"] = scores["vote_count"]
            frames.append(part)
    cat = df[df["criterion"].isin(categorical) & df["label"].notna()].assign(item=lambda d: d["item_id"])
    if not cat.empty:
        m = majority_frame(cat)
        m["level"] = "criterion"
        frames.append(m)
    if not frames:
        return pd.DataFrame(columns=CONSENSUS_COLUMNS)
    table = pd.concat(frames, ignore_index=True)
    keys = list(zip(table["item"].astype(int), table["output"].astype(int)))
    table["system"] = [outputs.get(k, {}).get("system") for k in keys]
    order = {"criterion": 0, "group": 1, "overall": 2, "left_out": 3}
    table = table.assign(_o=table["level"].map(order)).sort_values(
        ["item", "output", "_o", "criterion"], kind="stable")
    table["item"] = table["item"].map(names)
    return table.reindex(columns=CONSENSUS_COLUMNS)


CONSENSUS_COLUMNS = ["item", "output", "system", "level", "criterion", "consensus", "ci_low", "ci_high", "sd",
                     "n", "majority", "share"]


# How each level's consensus is made (the release's `method` column); a rater model's name
# (e.g. dawid-skene) replaces "majority" where a categorical criterion was modelled.
LEVEL_METHODS = {"criterion:numeric": "mean", "criterion:categorical": "majority", "group": "rubric weights",
                 "overall": "rubric weights", "left_out": ""}
CONSENSUS_SCHEMA = pa.schema([
    ("item", pa.string()), ("output", pa.int16()), ("system", pa.string()), ("level", pa.string()),
    ("criterion", pa.string()), ("method", pa.string()), ("consensus", pa.float64()), ("ci_low", pa.float64()),
    ("ci_high", pa.float64()), ("sd", pa.float64()), ("n", pa.int64()), ("majority", pa.string()),
    ("share", pa.float64()), ("label", pa.string()), ("posterior", pa.float64()),
])


def consensus_batches(study: Study, *, modelled: Mapping[str, Any] | None = None,
                      progress: Progress | None = None, read: Any = None) -> Iterator[pa.RecordBatch]:
    """The consensus table of a release (CONSENSUS_SCHEMA), a batch per chunk of items: the
    consensus CSV's rows with the `method` of each, and for a categorical criterion in `modelled`
    ({criterion: labels_by_output(...)}: the rater model's label and posterior per output) that
    model's `label` and `posterior` beside the majority."""
    _, _, categorical = analysed(study)
    modelled = modelled or {}
    chunks = item_chunks(study, progress=progress)
    for df, outputs in read.frames_through(chunks) if read is not None else chunks:  # read: a RowCounter
        table = consensus_rows(study, df, outputs)
        if not len(table):
            continue
        level = table["level"].to_numpy(object)
        is_cat = (level == "criterion") & table["criterion"].isin(categorical).to_numpy()
        method = np.where(level == "criterion", np.where(is_cat, LEVEL_METHODS["criterion:categorical"],
                                                          LEVEL_METHODS["criterion:numeric"]),
                          pd.Series(level).map(LEVEL_METHODS).fillna("").to_numpy(object))
        table["method"], table["label"], table["posterior"] = method, None, np.nan
        first = df.drop_duplicates("item_id")
        ids = dict(zip(first["item"].astype(str), first["item_id"].astype(int)))  # (the model's keys are ids)
        for key, fit in modelled.items():
            rows = np.flatnonzero(is_cat & (table["criterion"] == key).to_numpy())
            if not rows.size:
                continue
            found = [fit["labels"].get((ids[item], int(output)))
                     for item, output in zip(table["item"].iloc[rows], table["output"].iloc[rows])]
            table.iloc[rows, table.columns.get_loc("method")] = fit["method"]
            table.iloc[rows, table.columns.get_loc("label")] = [f[0] if f else None for f in found]
            table.iloc[rows, table.columns.get_loc("posterior")] = [f[1] if f else np.nan for f in found]
        table["majority"] = table["majority"].map(lambda v: None if v is None or v != v else str(v))
        yield pa.RecordBatch.from_pandas(table.reindex(columns=CONSENSUS_SCHEMA.names), schema=CONSENSUS_SCHEMA,
                                         preserve_index=False)


def count_comparative_answers(study: Study, key: str) -> int:
    """Stored answers to comparative question `key` that the comparative pairs read
    (annotation.reports.comparisons.comparative_answers): attention checks and ignored work left out."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {_A} a JOIN {_R} r ON r.assignment_id = a.id WHERE a.study_id = %s"
            " AND a.status = %s AND NOT a.ignored AND NOT a.is_attention_check AND r.output_id IS NULL"
            " AND r.criterion = %s", [study.pk, Assignment.Status.SUBMITTED, key])
        return int(cursor.fetchone()[0])


def count_analysed_ratings(study: Study) -> int:
    """Ratings the consensus and pairs read (datasets.tables.item_chunks): stats_frame's rows of the
    analysed criteria, attention checks left out."""
    _, numeric, categorical = analysed(study)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {_A} a JOIN {_R} r ON r.assignment_id = a.id WHERE a.study_id = %s"
            " AND a.status = %s AND NOT a.ignored AND NOT a.is_attention_check AND r.criterion = ANY(%s)",
            [study.pk, Assignment.Status.SUBMITTED, numeric + categorical])
        return int(cursor.fetchone()[0])
