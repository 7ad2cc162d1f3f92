"""What was rated: one row per output of every item (its context, the output's text, system and kind),
so that a release can be used without Concord's database. The ratings table joins it on (item, output).

Attention checks and training items are kept, flagged: the ratings table has their rows too.
An item without outputs (a rubric of item-level criteria only) has one row with no output.
Releases are for researchers: the system names are here as they are in the ratings table.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import pyarrow as pa

from annotation.models import Item, Study

ITEMS_SCHEMA = pa.schema([
    ("item", pa.string()), ("context", pa.string()), ("context_kind", pa.string()),
    ("output", pa.int16()), ("system", pa.string()), ("kind", pa.string()), ("content", pa.string()),
    ("is_attention_check", pa.bool_()),
    # An OTLP trace's admission (annotation.traces.sampling): how and with what probability it was kept.
    ("trace_sampling", pa.string()), ("inclusion_probability", pa.float64()),
])
ITEM_ROWS_PER_BATCH = 2_000
Progress = Callable[[int], None]


def item_batches(study: Study, *, rows_per_batch: int = ITEM_ROWS_PER_BATCH,
                 progress: Progress | None = None) -> Iterator[pa.RecordBatch]:
    """The items table in batches, in upload order (item id, then output position): the same
    items always give the same rows. `progress(n)` is told each batch's number of items begun."""
    names = ITEMS_SCHEMA.names
    rows = (Item.objects.filter(study=study)
            .order_by("id", "outputs__position")
            .values_list("id", "external_id", "context", "context_kind", "outputs__position", "outputs__system",
                         "outputs__kind", "outputs__content", "is_attention_check",
                         "metadata__sampling__rule", "metadata__sampling__probability")
            .iterator(chunk_size=rows_per_batch))
    columns: dict[str, list[Any]] = {n: [] for n in names}
    last_item, items_begun = None, 0
    for item_id, *values in rows:
        if item_id != last_item:
            last_item, items_begun = item_id, items_begun + 1
        for name, value in zip(names, values):
            columns[name].append(value)
        if len(columns["item"]) >= rows_per_batch:
            yield pa.RecordBatch.from_pydict(columns, schema=ITEMS_SCHEMA)
            columns = {n: [] for n in names}
            if progress:
                progress(items_begun)
            items_begun = 0
    if columns["item"]:
        yield pa.RecordBatch.from_pydict(columns, schema=ITEMS_SCHEMA)
        if progress:
            progress(items_begun)


def json_lines(batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    """One JSON object per row (null where a value is missing), a chunk of lines per batch."""
    for batch in batches:
        if batch.num_rows:
            yield "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
                          for row in batch.to_pylist()).encode()
