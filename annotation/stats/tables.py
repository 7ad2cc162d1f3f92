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
    """Long ratings table: columns item, rater, score and optionally criterion.

    A criterion's scores are all numbers or all text labels (Yes/No, TP/FP1, ACCEPT/REJECT, taken
    as nominal codes); a mix is refused at the first odd one out. `score` is float when every
    criterion has numbers, else text (the report codes the labels)."""
    df = _read(path, ("item", "rater", "score"))
    if "criterion" in df.columns:
        empty = (df["criterion"].str.strip() == "").to_numpy()
        if empty.any():
            raise TableError("empty value", row=int(np.flatnonzero(empty)[0]) + 2, column="criterion")
    text = df["score"].str.strip()
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    is_number = np.isfinite(numbers)
    out = pd.DataFrame({"item": df["item"].str.strip(), "rater": df["rater"].str.strip(),
                        "score": numbers if is_number.all() else text})
    if "criterion" in df.columns:
        out["criterion"] = df["criterion"].str.strip()
        groups = out.groupby("criterion", sort=False).indices.items()
    else:
        groups = [("score", np.arange(len(out)))]
    for name, rows in groups:
        _one_kind(text, is_number, np.asarray(rows), str(name))
    return out


def _one_kind(text: pd.Series, is_number: np.ndarray, rows: np.ndarray, criterion: str) -> None:
    """Refuse a criterion whose scores mix numbers and text labels, naming the first odd one out."""
    numeric = is_number[rows]
    if numeric.all() or not numeric.any():
        return
    if numeric.sum() >= (~numeric).sum():
        i = int(rows[np.flatnonzero(~numeric)[0]])
        raise TableError(f"not a number: {text.iloc[i]!r} (the other scores of criterion {criterion!r} "
                         "are numbers)", row=i + 2, column="score")
    i = int(rows[np.flatnonzero(numeric)[0]])
    raise TableError(f"a number among text labels: {text.iloc[i]!r} (criterion {criterion!r} has labels "
                     "such as " + repr(text.iloc[int(rows[np.flatnonzero(~numeric)[0]])]) + ")",
                     row=i + 2, column="score")


def read_labels(path: str | Path, *, cost: bool = False) -> tuple[dict[str, str], dict[str, float] | None]:
    """id -> label, and id -> cost when `cost` and the file has a cost column. Ids must be unique."""
    df = _read(path, ("id", "label"))
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

