"""Reading the CSV inputs of `agreement` and `gold_eval`, validated whole.

Errors name the row as the file's line number (the header is line 1) and the column.
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


class TableError(ValueError):
    def __init__(self, message: str, row: int | None = None, column: str | None = None):
        self.row, self.column = row, column
        where = ", ".join(p for p in (f"row {row}" if row else "", f"column {column!r}" if column else "") if p)
        super().__init__(f"{where}: {message}" if where else message)


def read_table(path: str | Path, required: tuple[str, ...], nonempty: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every value as text. Besides CSV, Concord's own Parquet and JSON lines files (the exports, the Python
    client's tables) are read as they are, each row numbered as in the CSV export (header = row 1; a JSON
    lines file's row is its line)."""
    kind = sniff(path)
    if kind != "csv":
        df = _parquet(path) if kind == "parquet" else _json_lines(path)
        return _checked(df, required, nonempty)
    try:
        with warnings.catch_warnings():
            # A row longer than the header would otherwise make its first values the row's index.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, index_col=False)
    except pd.errors.ParserWarning as exc:
        raise TableError("more values than the header has columns", row=_first_long_row(path)) from exc
    except FileNotFoundError as exc:
        raise TableError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise TableError(f"not UTF-8 text (byte {exc.start})") from exc
    except (pd.errors.ParserError, csv.Error) as exc:
        raise TableError(f"not a valid CSV: {exc}") from exc
    except pd.errors.EmptyDataError as exc:
        raise TableError("empty file") from exc
    return _checked(df, required, nonempty)


def _checked(df: pd.DataFrame, required: tuple[str, ...], nonempty: tuple[str, ...] | None) -> pd.DataFrame:
    df.columns = [c.strip() for c in df.columns]
    for col in required:
        if col not in df.columns:
            raise TableError(f"missing column (found: {', '.join(df.columns)})", row=1, column=col)
    _nonempty(df, required if nonempty is None else nonempty)
    return df


def sniff(path) -> str:
    """'parquet', 'jsonl' or 'csv' from a file's first bytes; an open text stream (an upload) is CSV."""
    if not isinstance(path, (str, Path)):
        return "csv"
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return "csv"  # read_csv names what is wrong
    if head.startswith(b"PAR1"):
        return "parquet"
    return "jsonl" if head.lstrip()[:1] == b"{" else "csv"


def _text(value) -> str:
    """A typed value as the CSV export writes it: nulls empty, booleans true/false, nested values as JSON."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if hasattr(value, "tolist"):  # numpy arrays of a list column
        return json.dumps(value.tolist(), ensure_ascii=False)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _parquet(path: str | Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        records = pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow's many errors: a broken file either way
        raise TableError(f"not a readable Parquet file: {exc}") from exc
    return _frame(records)


def _json_lines(path: str | Path) -> pd.DataFrame:
    records = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TableError(f"not JSON: {exc.msg}", row=n) from exc
                if not isinstance(record, dict):
                    raise TableError("not a JSON object", row=n)
                records.append((n, record))
    except UnicodeDecodeError as exc:
        raise TableError(f"not UTF-8 text (byte {exc.start})") from exc
    df = _frame([r for _, r in records])
    df.index = np.array([n for n, _ in records], dtype=np.int64) - 2  # index + 2 is the line, as for a CSV
    return df


def _frame(records: list[dict]) -> pd.DataFrame:
    if not records:
        raise TableError("empty file")
    columns = list(dict.fromkeys(k for r in records for k in r))
    return pd.DataFrame({c: [_text(r.get(c)) for r in records] for c in columns}, dtype=object)


def _first_long_row(path: str | Path) -> int | None:
    """The line number (header = 1) of the first row with more fields than the header."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = csv.reader(f, skipinitialspace=True)
            width = len(next(rows, []))
            for n, row in enumerate(rows, start=2):
                if len(row) > width:
                    return n
    except (UnicodeDecodeError, csv.Error):
        pass
    return None


def _nonempty(df: pd.DataFrame, columns: tuple[str, ...]) -> None:
    for col in columns:
        empty = (df[col].str.strip() == "").to_numpy()
        if empty.any():
            raise TableError("empty value", row=int(df.index[np.flatnonzero(empty)[0]]) + 2, column=col)


def _numeric(df: pd.DataFrame, col: str) -> np.ndarray:
    values = pd.to_numeric(df[col].str.strip(), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise TableError(f"not a number: {df[col].iloc[i]!r}", row=i + 2, column=col)
    return values


# Concord's own long export (export_study --format csv): kinds whose `score` is the rating, kinds
# whose rating is the chosen label (in `value`), the rest (text, spans) carry no rating to agree on.
_SCORE_KINDS = {"likert", "numeric", "confidence"}
_LABEL_KINDS = {"binary", "choice"}
_TRUE = {"true", "t", "1", "yes"}


def read_ratings(path: str | Path) -> pd.DataFrame:
    """Long ratings table: columns item, rater, score and optionally criterion and output.

    A criterion's scores are all numbers or all text labels (Yes/No, TP/FP1, ACCEPT/REJECT, taken
    as nominal codes); a mix is refused at the first odd one out. `score` is float when every
    criterion has numbers, else text (the report codes the labels). With an `output` column the
    rated unit is (item, output), as in Concord's own export, which is read as it is: ignored
    items and attention checks are left out, choices are rated by their label (`value`), text
    and highlights are not ratings. `attrs["levels"]` holds a default level for criteria whose
    kind fixes it (choices are nominal even when their labels are digits).
    """
    df = read_table(path, ("item", "rater", "score"), nonempty=())
    levels: dict[str, str] = {}
    if "criterion_kind" in df.columns:
        df, levels = _from_export(df)
    else:
        _nonempty(df, ("item", "rater", "score") + (("criterion",) if "criterion" in df.columns else ()))
    _nonempty(df, ("item", "rater"))
    text = df["score"].str.strip()
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    is_number = np.isfinite(numbers)
    unit_item = df["item"].str.strip()
    output = df["output"].str.strip() if "output" in df.columns else pd.Series("", index=df.index)
    item = unit_item.where(output == "", unit_item + " / output " + output)
    out = pd.DataFrame({"item": item.to_numpy(), "rater": df["rater"].str.strip().to_numpy(),
                        "score": numbers if is_number.all() else text.to_numpy()})
    # The rated unit's parts and the criterion's kind, for readers that keep them apart (`consensus`).
    out["unit_item"], out["unit_output"] = unit_item.to_numpy(), output.to_numpy()
    out["kind"] = df["criterion_kind"].str.strip().to_numpy() if "criterion_kind" in df.columns else ""
    out["line"] = df.index.to_numpy() + 2  # the file's line (header = 1): the export's rows are a subset
    if "criterion" in df.columns:
        out["criterion"] = df["criterion"].str.strip().to_numpy()
        groups = out.groupby("criterion", sort=False).indices.items()
    else:
        groups = [("score", np.arange(len(out)))]
    lines = df.index.to_numpy() + 2
    for name, rows in groups:
        if levels.get(str(name)) != "nominal":
            _one_kind(text, is_number, np.asarray(rows), str(name), lines)
    out.attrs["levels"] = levels
    return out


def _from_export(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Concord's export -> the rows that are ratings, with `score` holding the rating."""
    for col in ("criterion", "value"):
        if col not in df.columns:
            raise TableError(f"missing column (found: {', '.join(df.columns)})", row=1, column=col)
    kind = df["criterion_kind"].str.strip()
    keep = (df["criterion"].str.strip() != "") & kind.isin(_SCORE_KINDS | _LABEL_KINDS)
    for flag in ("ignored", "is_attention_check"):
        if flag in df.columns:
            keep &= ~df[flag].str.strip().str.lower().isin(_TRUE)
    df = df[keep].copy()
    labels = kind[keep].isin(_LABEL_KINDS)
    df.loc[labels, "score"] = df.loc[labels, "value"]
    _nonempty(df, ("score",))
    levels = {str(c): "nominal" for c in df.loc[labels, "criterion"].str.strip().unique()}
    return df, levels


def _one_kind(text: pd.Series, is_number: np.ndarray, rows: np.ndarray, criterion: str, lines: np.ndarray) -> None:
    """Refuse a criterion whose scores mix numbers and text labels, naming the first odd one out."""
    numeric = is_number[rows]
    if numeric.all() or not numeric.any():
        return
    if numeric.sum() >= (~numeric).sum():
        i = int(rows[np.flatnonzero(~numeric)[0]])
        raise TableError(f"not a number: {text.iloc[i]!r} (the other scores of criterion {criterion!r} "
                         "are numbers)", row=int(lines[i]), column="score")
    i = int(rows[np.flatnonzero(numeric)[0]])
    raise TableError(f"a number among text labels: {text.iloc[i]!r} (criterion {criterion!r} has labels "
                     "such as " + repr(text.iloc[int(rows[np.flatnonzero(~numeric)[0]])]) + ")",
                     row=int(lines[i]), column="score")


def read_labels(path: str | Path, *, cost: bool = False,
                empty_labels: bool = False) -> tuple[dict[str, str], dict[str, float] | None]:
    """id -> label, and id -> cost when `cost` and the file has a cost column. Ids must be unique.
    `empty_labels`: an empty label is kept as "" (a prediction the judge failed to give)."""
    df = read_table(path, ("id",) if empty_labels else ("id", "label"))
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

