"""One way in for every file: an items file (JSONL or CSV) as before, or a trace or log file
(annotation.traces.files) made into items first. Both end in items_import: all or nothing, and
refusals come as ItemFileError (line, field, message), so the page, the API and the command show
them as they show an items file's.
"""

from __future__ import annotations

import json
import re
from typing import IO

from annotation.importers import ItemFileError
from annotation.models import Study
from annotation.services.items import items_import
from annotation.traces import files
from annotation.traces.mapping import TraceFormatError
from config.limits import limit

DETECT_BYTES = 1 << 20  # enough for an items file's first line, which says it is one (its "outputs")
_LINE = re.compile(r"^line (\d+)(?::\s*|\.|$)(.*)$")


def file_import(*, study: Study, file: IO[bytes], filename: str = "", fmt: str | None = None) -> int:
    """Import `file` into `study`: `fmt` names an items format (jsonl, csv) or a trace format
    (files.FORMATS); without it the file's name and first bytes decide. Returns the items imported."""
    if fmt is None:
        head = file.read(DETECT_BYTES)
        file.seek(0)
        fmt = files.detect(filename, head if isinstance(head, bytes) else head.encode())
    if fmt not in files.FORMATS:
        return items_import(study=study, file=file, filename=filename, fmt=fmt)
    most = limit("upload.traces")  # a trace file is read whole (a .eval log is a zip)
    data = file.read(most + 1)
    if len(data) > most:
        raise ItemFileError([(1, "", f"{fmt} file: at most {most:,} bytes, read whole (this file has more)")])
    try:
        rows = files.rows(data if isinstance(data, bytes) else data.encode(), fmt,
                          max_spans=limit("traces.spans_per_file"))
    except TraceFormatError as exc:
        raise ItemFileError([_error(exc, fmt)]) from None
    if not rows:
        raise ItemFileError([(1, "", f"the {fmt} file holds no model calls or tool calls to import")])
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    try:
        return items_import(study=study, text=text, fmt="jsonl")
    except ItemFileError as exc:
        # The lines of the converted file are items: name each by its id, which the source gave.
        raise ItemFileError([(line, f"item {rows[line - 1]['id']!r}" + (f": {fld}" if fld else ""), msg)
                             if 0 < line <= len(rows) else (line, fld, msg) for line, fld, msg in exc.errors]) from None


def _error(exc: TraceFormatError, fmt: str) -> tuple[int, str, str]:
    """(line, field, message) of a trace file's problem: its line when the format has lines."""
    match = _LINE.match(exc.where or "")
    if match:
        return int(match.group(1)), match.group(2), f"{fmt}: {exc.message}"
    return 1, exc.where, f"{fmt}: {exc.message}"
