"""A download never drops a row silently: the rows a formatter wrote (or, for a table computed from
the ratings, the rows it read) are counted as they go and checked against the database's count
before the last chunk leaves. Each kind has its count: the long format's rows (ratings downloads),
items and outputs (items downloads), the analysed ratings of non-attention items (pairs, consensus), a comparative
study's answers to its first comparative question (its pairs). A mismatch is logged and
raised, so a streamed response ends without its final chunk (the client sees a broken download, not
a short file) and a release build fails with the reason.

The database is counted before the first row and after the last: outside a transaction the export's
snapshot lies between the two, so a rater submitting meanwhile moves the count within that window
and is not taken for a loss.
"""

from __future__ import annotations

import logging
from typing import Callable, Iterable, Iterator

import numpy as np

from annotation.models import Study
from annotation.datasets.tables import count_analysed_ratings
from annotation.reports.ratings import count_item_rows, count_rating_rows

log = logging.getLogger(__name__)
_QUOTE, _NEWLINE = ord('"'), ord("\n")


class RowsMissing(RuntimeError):
    """A download wrote other than the database's number of rows."""


def csv_rows(data: bytes) -> int:
    """Rows ended in whole-row CSV bytes: newlines outside quoted values (a quoted value holds its
    quotes doubled, so a newline is outside when the quotes before it are even in number)."""
    if b'"' not in data:
        return data.count(b"\n")
    raw = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(raw == _QUOTE)
    newlines = np.flatnonzero(raw == _NEWLINE)
    return int(np.count_nonzero(np.searchsorted(quotes, newlines) % 2 == 0))


def checked_rows(study: Study, chunks: Iterable[bytes], written: Callable[[], int], *, what: str,
                 count: Callable[[Study], int] | None = None) -> Iterator[bytes]:
    """`chunks`, the last held back until `written()` (rows so far) is what the database holds
    (`count(study)`: the long format's rows unless told)."""
    count = count or count_rating_rows
    before = count(study)
    held = None
    for chunk in chunks:
        if held is not None:
            yield held
        held = chunk
    after = count(study)
    rows = written()
    if not min(before, after) <= rows <= max(before, after):
        log.error("%s of study %s wrote %d rows where the database holds %d; the download is cut short",
                  what, study.slug, rows, after)
        raise RowsMissing(f"{what}: wrote {rows} rows where the study has {after}; the download is incomplete")
    if held is not None:
        yield held


def items_checked(study: Study, chunks: Iterable[bytes], written: Callable[[], int], *, what: str) -> Iterator[bytes]:
    """An items download: one row per output, one per item without outputs."""
    return checked_rows(study, chunks, written, what=what, count=count_item_rows)


def ratings_read_checked(study: Study, chunks: Iterable[bytes], read: Callable[[], int], *, what: str
                         ) -> Iterator[bytes]:
    """A table computed from the ratings (pairs, consensus): every analysed rating was read."""
    return checked_rows(study, chunks, read, what=what, count=count_analysed_ratings)


class RowCounter:
    """Counts rows as a formatter's pieces pass through it."""

    def __init__(self, start: int = 0):
        self.rows = start  # -1: a header line comes first

    def __call__(self) -> int:
        return self.rows

    def bytes_through(self, chunks: Iterable[bytes], rows_of: Callable[[bytes], int]) -> Iterator[bytes]:
        for chunk in chunks:
            self.rows += rows_of(chunk)
            yield chunk

    def batches_through(self, batches):
        for batch in batches:
            self.rows += batch.num_rows
            yield batch

    def frames_through(self, chunks):
        """item_chunks' (ratings frame, outputs): the frame's rows are the ratings read."""
        for df, outputs in chunks:
            self.rows += len(df)
            yield df, outputs
