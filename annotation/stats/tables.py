"""Reading the CSV inputs of `agreement` and `gold_eval`, validated whole.

Errors name the row as the file's line number (the header is line 1) and the column.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd


class TableError(ValueError):
    def __init__(self, message: str, row: int | None = None, column: str | None = None):
        self.row, self.column = row, column
        where = ", ".join(p for p in (f"row {row}" if row else "", f"column {column!r}" if column else "") if p)
        super().__init__(f"{where}: {message}" if where else message)


def _read(path: str | Path, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except FileNotFoundError as exc:
        raise TableError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise TableError(f"not UTF-8 text (byte {exc.start})") from exc
    except (pd.errors.ParserError, csv.Error) as exc:
        raise TableError(f"not a valid CSV: {exc}") from exc
    except pd.errors.EmptyDataError as exc:
        raise TableError("empty file") from exc
    df.columns = [c.strip() for c in df.columns]
    for col in required:
        if col not in df.columns:
            raise TableError(f"missing column (found: {', '.join(df.columns)})", row=1, column=col)
    for col in required:
        empty = (df[col].str.strip() == "").to_numpy()
        if empty.any():
            raise TableError("empty value", row=int(np.flatnonzero(empty)[0]) + 2, column=col)
    return df


def _numeric(df: pd.DataFrame, col: str) -> np.ndarray:
    values = pd.to_numeric(df[col].str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableError(f"not a number: {df[col].iloc[i]!r}", row=i + 2, column=col)
    return values


def read_ratings(path: str | Path) -> pd.DataFrame:
    """Long ratings table: columns item, rater, score (numeric) and optionally criterion."""
    df = _read(path, ("item", "rater", "score"))
    if "criterion" in df.columns:
        empty = (df["criterion"].str.strip() == "").to_numpy()
        if empty.any():
            raise TableError("empty value", row=int(np.flatnonzero(empty)[0]) + 2, column="criterion")
    out = pd.DataFrame({"item": df["item"].str.strip(), "rater": df["rater"].str.strip(),
                        "score": _numeric(df, "score")})
    if "criterion" in df.columns:
        out["criterion"] = df["criterion"].str.strip()
    return out


def read_labels(path: str | Path, *, cost: bool = False,
                empty_labels: bool = False) -> tuple[dict[str, str], dict[str, float] | None]:
    """id -> label, and id -> cost when `cost` and the file has a cost column. Ids must be unique.
    `empty_labels`: an empty label is kept as "" (a prediction the judge failed to give)."""
    df = _read(path, ("id",) if empty_labels else ("id", "label"))
    if "label" not in df.columns:
        raise TableError(f"missing column (found: {', '.join(df.columns)})", row=1, column="label")
    ids = df["id"].str.strip()
    dup = ids.duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise TableError(f"duplicate id {ids.iloc[i]!r}", row=i + 2, column="id")
    labels = dict(zip(ids, df["label"].str.strip()))
    costs = None
    if cost and "cost" in df.columns:
        costs = dict(zip(ids, _numeric(df, "cost")))
    return labels, costs

