"""A long CSV of ratings (annotation.stats.tables.read_ratings: `agreement`'s input, or Concord's own
export as it is) coded for the rater models, as `consensus` codes a stored study's ratings.

    file_codes(path, wanted) -> [(criterion, codes)]   # codes: unit, rater, x, units, raters

A criterion of the export is a scale or a choice by its criterion_kind; in a plain file by its
scores: numbers make a scale, text labels a choice whose labels are taken in sorted order (a file
has no rubric to give their order). Units are (item, output), the output as its position.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from annotation.stats.tables import TableError, read_ratings

NUMERIC_KINDS = {"likert", "numeric"}
CATEGORICAL_KINDS = {"binary", "choice"}


def is_file(source: str) -> bool:
    """A command's STUDY_OR_FILE names a file when it exists or looks like a path (slugs have no '.' or '/')."""
    return Path(source).is_file() or "." in source or "/" in source


def file_codes(path: str | Path, wanted: list[str]) -> Iterator[tuple[dict, dict]]:
    df = read_ratings(path)
    if "criterion" not in df.columns:
        df["criterion"] = "score"
    # The export's confidence, text and spans rows are not consensus data (as with a stored study).
    kind = df["kind"].to_numpy(object)
    df = df[(kind == "") | np.isin(kind, list(NUMERIC_KINDS | CATEGORICAL_KINDS))]
    names = list(dict.fromkeys(df["criterion"].astype(str)))
    unknown = [k for k in wanted if k not in names]
    if unknown:
        raise TableError(f"--criterion {unknown[0]!r} is not in the file; it has {', '.join(names) or '(none)'}",
                         column="criterion")
    _no_duplicates(df)
    criteria = []
    for name in names:
        if wanted and name not in wanted:
            continue
        rows = df[df["criterion"].astype(str) == name]
        numbers = pd.to_numeric(rows["score"].astype(str), errors="coerce")
        categorical = bool(set(rows["kind"]) & CATEGORICAL_KINDS) or bool(numbers.isna().any())
        criteria.append((name, rows, categorical))
    for name, rows, categorical in criteria:
        unit, unit_keys = pd.factorize(pd.MultiIndex.from_arrays([rows["unit_item"].to_numpy(),
                                                                  rows["unit_output"].to_numpy()]))
        rater, rater_names = pd.factorize(rows["rater"].to_numpy())
        units = [{"item": i, "output": int(o) if o.lstrip("-").isdigit() else None} for i, o in unit_keys]
        if categorical:
            text = rows["score"].astype(str).str.strip().to_numpy()
            labels = sorted(set(text))
            order = {label: k for k, label in enumerate(labels)}
            criterion = {"key": name, "kind": "choice", "choices": [{"value": v} for v in labels]}
            x = np.array([order[v] for v in text], dtype=float)
        else:
            criterion = {"key": name, "kind": "numeric"}
            x = pd.to_numeric(rows["score"].astype(str), errors="coerce").to_numpy(float)
        yield criterion, {"unit": unit, "rater": rater, "x": x, "units": units,
                          "raters": [str(r) for r in rater_names]}


def _no_duplicates(df: pd.DataFrame) -> None:
    """One rating per rater, unit and criterion: a second one is refused at its line."""
    dup = df.duplicated(["criterion", "unit_item", "unit_output", "rater"]).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        row = df.iloc[i]
        raise TableError(f"rater {row['rater']!r} rated {row['item']!r} on {row['criterion']!r} twice",
                         row=int(row["line"]), column="rater")
