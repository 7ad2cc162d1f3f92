"""Text that reaches a CSV file neutralised for spreadsheets (OWASP "CSV injection").

A cell that begins with =, +, - or @ is a formula to Excel, LibreOffice and Google Sheets;
a crowd rater's `=HYPERLINK(...)` would run in the researcher's spreadsheet. Such text gets
a leading single quote, which spreadsheets show as text. Only CSV is treated so: JSONL and
Parquet keep every value raw. Numbers are never text here, so a negative score stays a number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@")


def spreadsheet_safe(value: Any) -> Any:
    """`value` with a leading `'` when it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_safe_column(column: pd.Series) -> pd.Series:
    """spreadsheet_safe over a whole column at once (values that are not text pass through)."""
    from pandas.api.types import is_string_dtype  # here: the views import spreadsheet_safe, never pandas

    risky = column.str[:1].isin(FORMULA_STARTS) if column.dtype == object or is_string_dtype(column) else None
    if risky is None or not risky.any():
        return column
    return column.where(~risky, "'" + column.where(risky, ""))
