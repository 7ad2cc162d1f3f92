"""Parse and validate item files (JSONL or CSV), streamed: one line at a time, from text or a file.

Pure: no Django. The format is documented in docs/item-format.md. Every problem is
collected with its line number and field, so a user can fix the file in one pass.
`parse_items` gives the whole file's items (or raises); `ItemStream` yields them as they are
read, so a file of millions of items is never held whole (the import writes them as they come
and keeps nothing when the stream ends with an error).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from typing import IO, Iterator

from annotation import trajectory

CONTEXT_KINDS = {"text", "markdown", "code", "html", "conversation", "trajectory"}
OUTPUT_KINDS = {"text", "markdown", "code", "html", "diff", "conversation", "trajectory"}
MAX_ERRORS = 50
MAX_SYSTEM_LENGTH = 200  # Output.system's column
MAX_JSON_DEPTH = 64  # metadata/gold nesting; deeper is no annotation data and strains every JSON encoder
# Cells hold whole HTML pages and programs; the csv module's default limit is 128 KiB per field.
csv.field_size_limit(2**31 - 1)
_OUTPUT_COLUMN = re.compile(r"^output_(\d+)_(system|content|kind)$")
READ_BLOCK = 1 << 20  # bytes read from a file at a time


@dataclass(frozen=True)
class ParsedOutput:
    system: str
    content: str
    kind: str = "text"
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ParsedItem:
    line: int
    external_id: str
    context: str
    context_kind: str
    outputs: list[ParsedOutput]
    metadata: dict
    gold: dict
    is_attention_check: bool = False
    is_training: bool = False
    explanation: str = ""


class ItemFileError(ValueError):
    """The file was refused; `errors` is a list of (line, field, message)."""

    def __init__(self, errors: list[tuple[int, str, str]]):
        self.errors = errors
        lines = [f"line {line}: {fld}: {msg}" if fld else f"line {line}: {msg}" for line, fld, msg in errors]
        if len(errors) >= MAX_ERRORS:
            lines.append(f"(stopped after {MAX_ERRORS} errors)")
        super().__init__("\n".join(lines))


def detect_format(filename: str, head: str) -> str:
    name = filename.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return "jsonl" if head.lstrip().startswith("{") else "csv"


def parse_items(text: str, *, filename: str = "", fmt: str | None = None, criteria_keys: set[str] | None = None,
                existing_ids: set[str] | None = None) -> list[ParsedItem]:
    """Parse a whole file; raise ItemFileError listing every problem (up to MAX_ERRORS)."""
    return list(ItemStream(text, filename=filename, fmt=fmt, criteria_keys=criteria_keys,
                           existing_ids=existing_ids))


class ItemStream:
    """A file's items, validated as they are read from `source` (text, or a binary file read as
    UTF-8 in blocks). Iterating yields each valid item until the first problem, then reads on
    only to collect problems; at the end (or at MAX_ERRORS) it raises ItemFileError with them
    all. So a consumer that writes what it is given must keep nothing when the iteration raises.
    A file that is not UTF-8 raises UnicodeDecodeError where the bad byte is read.
    """

    def __init__(self, source: str | IO[bytes], *, filename: str = "", fmt: str | None = None,
                 criteria_keys: set[str] | None = None, existing_ids: set[str] | None = None):
        self._text = _TextSource(source)
        self.fmt = fmt or detect_format(filename, self._text.head)
        self._criteria_keys = criteria_keys
        self._existing_ids = existing_ids or set()

    def __iter__(self) -> Iterator[ParsedItem]:
        lines = self._text.lines()
        rows = _jsonl_rows(lines) if self.fmt == "jsonl" else _csv_rows(lines)
        errors: list[tuple[int, str, str]] = []
        # id -> line of every item so far: the one thing held per item (duplicates are named with both lines).
        seen: dict[str, int] = {}
        for line, row in rows:
            if isinstance(row, _RowError):
                errors.append((line, row.field, row.message))
            else:
                item = _validate(line, row, errors, self._criteria_keys)
                if item is not None:
                    if item.external_id in seen:
                        errors.append((line, "id", f"duplicate id {item.external_id!r} (first on line {seen[item.external_id]})"))
                    elif item.external_id in self._existing_ids:
                        errors.append((line, "id", f"id {item.external_id!r} already exists in this study"))
                    else:
                        seen[item.external_id] = line
                        if not errors:
                            yield item
            if len(errors) >= MAX_ERRORS:
                break
        if not errors and not seen:
            errors.append((1, "", "the file holds no items"))
        if errors:
            raise ItemFileError(errors)


class _TextSource:
    """The text of an upload, from a str or a binary file, with its first characters known
    before the lines are read (format detection). Lines end at "\n" only, and keep it:
    str.splitlines() would also split inside a string holding U+2028 or \x85."""

    def __init__(self, source: str | IO[bytes]):
        self._source = source
        if isinstance(source, str):
            self._first = source.removeprefix("\ufeff")  # a byte order mark from Excel or Notepad
            self._decoder = None
        else:
            self._decoder = codecs.getincrementaldecoder("utf-8")()
            self._first = self._read()
            while self._first is not None and not self._first:  # a block that ends inside a character
                self._first = self._read()
            self._first = (self._first or "").removeprefix("\ufeff")
        self.head = self._first[:200]

    def _read(self) -> str | None:
        block = self._source.read(READ_BLOCK)
        if isinstance(block, str):  # a file opened in text mode
            return block or None
        if not block:
            rest = self._decoder.decode(b"", final=True)
            return rest or None
        return self._decoder.decode(block)

    def lines(self) -> Iterator[str]:
        if self._decoder is None and isinstance(self._source, str):
            yield from io.StringIO(self._first, newline="\n")
            return
        pending, block = "", self._first
        while block is not None:
            pending += block
            cut = pending.rfind("\n") + 1
            if cut:
                yield from io.StringIO(pending[:cut], newline="\n")
                pending = pending[cut:]
            block = self._read()
        if pending:
            yield pending


@dataclass(frozen=True)
class _RowError:
    field: str
    message: str


def _json_load(raw: str) -> tuple[object, str | None]:
    """(value, None) or (None, why): json.loads' own errors plus the ValueError of an integer with more
    than 4300 digits and the RecursionError of deep nesting, which are no JSONDecodeError."""
    try:
        return json.loads(raw), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"


def _jsonl_rows(lines: Iterator[str]):
    for number, raw in enumerate(lines, start=1):
        raw = raw.removesuffix("\n")
        if not raw.strip():
            continue
        row, problem = _json_load(raw)
        if problem:
            yield number, _RowError("", problem)
            continue
        yield number, row if isinstance(row, dict) else _RowError("", "each line must be a JSON object")


def _csv_rows(lines: Iterator[str]):
    reader = csv.DictReader(lines, restval="")
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        yield 1, _RowError("", f"not valid CSV ({exc})")
        return
    if "id" not in header:
        yield 1, _RowError("id", "the header must have an 'id' column")
        return
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, _RowError("", f"not valid CSV ({exc})")
            return
        line = reader.line_num
        if None in row:
            yield line, _RowError("", "more values than header columns")
            continue
        yield line, _csv_to_record(line, row)


def _csv_to_record(line: int, row: dict[str, str]) -> dict | _RowError:
    outputs: dict[int, dict] = {}
    gold: dict = {}
    for column, value in row.items():
        match = _OUTPUT_COLUMN.match(column)
        if match:
            if value not in (None, ""):
                outputs.setdefault(int(match.group(1)), {})[match.group(2)] = value
        elif column.startswith("gold_") and value not in (None, ""):
            gold[column[5:]] = _number_or_text(value)
    metadata: object = {}
    if row.get("metadata"):
        metadata, problem = _json_load(row["metadata"])
        if problem:
            return _RowError("metadata", f"must be a JSON object; {problem}")
    record = {
        "id": row.get("id", ""),
        "context": row.get("context", ""),
        "context_kind": row.get("context_kind") or "text",
        "outputs": [outputs[n] for n in sorted(outputs)],
        "metadata": metadata,
        "gold": gold,
    }
    if row.get("attention_check"):
        record["attention_check"] = row["attention_check"].strip().lower() in {"1", "true", "yes"}
    if row.get("training"):
        record["training"] = row["training"].strip().lower() in {"1", "true", "yes"}
    if row.get("explanation"):
        record["explanation"] = row["explanation"]
    return record


def _number_or_text(value: str):
    try:
        number = float(value)
    except ValueError:
        return value
    if not math.isfinite(number):  # "nan", "inf", "1e999": JSON has no such number; keep the text
        return value
    return int(number) if number.is_integer() else number


def _text_problem(value: str) -> str | None:
    """Why PostgreSQL cannot store this text, or None."""
    if "\x00" in value:
        return "contains a NUL character, which cannot be stored"
    if value.isascii():  # a flag of the string, no scan: ASCII holds no surrogate
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains an unpaired surrogate (\\u{ord(value[exc.start]):04x}), which is not valid Unicode"
    return None


def _json_problem(value: object, where: str) -> tuple[str, str] | None:
    """(path, why) for the first part of a JSON value that PostgreSQL's jsonb cannot store, or None.
    Iterative, so a deeply nested value cannot exhaust the stack here."""
    stack = [(value, where, 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return path, f"nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(node, float) and not math.isfinite(node):
            return path, "must be a finite number (JSON has no NaN or Infinity)"
        if isinstance(node, str) and (why := _text_problem(node)):
            return path, why
        if isinstance(node, dict):
            for key, child in node.items():
                if why := _text_problem(key):
                    return path, f"a key {why}"
                stack.append((child, f"{path}.{key}", depth + 1))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{n}]", depth + 1) for n, child in enumerate(node))
    return None


def _validate(line: int, row: dict, errors: list, criteria_keys: set[str] | None) -> ParsedItem | None:
    start = len(errors)
    external_id = row.get("id")
    if isinstance(external_id, int) and not isinstance(external_id, bool):
        external_id = str(external_id)
    if not isinstance(external_id, str) or not external_id.strip():
        errors.append((line, "id", "required, a non-empty string"))
    elif len(external_id) > 200:
        errors.append((line, "id", "at most 200 characters"))
    elif why := _text_problem(external_id):
        errors.append((line, "id", why))
    context = row.get("context", "")
    if row.get("context_kind") == "trajectory":
        context = _trajectory_text(line, context, "context", errors)
    elif not isinstance(context, str):
        errors.append((line, "context", "must be a string"))
    elif why := _text_problem(context):
        errors.append((line, "context", why))
    context_kind = row.get("context_kind", "text")
    if not isinstance(context_kind, str) or context_kind not in CONTEXT_KINDS:
        errors.append((line, "context_kind", f"must be one of {sorted(CONTEXT_KINDS)}"))
    outputs = _validate_outputs(line, row.get("outputs"), errors)
    metadata = row.get("metadata", {}) or {}
    if not isinstance(metadata, dict):
        errors.append((line, "metadata", "must be an object"))
    elif problem := _json_problem(metadata, "metadata"):
        errors.append((line, *problem))
    gold = row.get("gold", {}) or {}
    if not isinstance(gold, dict):
        errors.append((line, "gold", "must be an object of criterion key -> answer"))
    elif criteria_keys is not None and (unknown_keys := [key for key in gold if key not in criteria_keys]):
        errors.append((line, f"gold.{unknown_keys[0]}", f"unknown criterion; the rubric has {sorted(criteria_keys)}"))
    elif problem := _json_problem(gold, "gold"):
        errors.append((line, *problem))
    attention = row.get("attention_check", False)
    if not isinstance(attention, bool):
        errors.append((line, "attention_check", "must be true or false"))
    training = row.get("training", False)
    explanation = row.get("explanation", "")
    if not isinstance(training, bool):
        errors.append((line, "training", "must be true or false"))
    elif training and not gold:
        errors.append((line, "gold", "a training item needs its expected answers"))
    if not isinstance(explanation, str):
        errors.append((line, "explanation", "must be text"))
    elif explanation and not training:
        errors.append((line, "explanation", "only training items carry an explanation"))
    unknown = set(row) - {"id", "context", "context_kind", "outputs", "metadata", "gold", "attention_check",
                          "training", "explanation"}
    if unknown:
        errors.append((line, sorted(unknown)[0], f"unknown field(s) {sorted(unknown)}"))
    if len(errors) > start:
        return None
    # A training item is an attention check too: left out of every statistic and export.
    return ParsedItem(line, external_id.strip(), context, context_kind, outputs, metadata, gold,
                      attention or training is True, training is True, explanation)


def _trajectory_text(line: int, value, where: str, errors: list):
    """A trajectory (object, list or JSON text) as its canonical stored text; a problem is recorded
    with the step and field it is in, and the value comes back unchanged (the item is refused)."""
    try:
        return trajectory.normalise(value)
    except trajectory.TrajectoryError as exc:
        errors.append((line, f"{where}.{exc.field}" if exc.field else where, exc.message))
        return ""


def _validate_outputs(line: int, outputs, errors: list) -> list[ParsedOutput]:
    if not isinstance(outputs, list) or not outputs:
        errors.append((line, "outputs", "required, a non-empty list"))
        return []
    parsed = []
    for n, output in enumerate(outputs):
        where = f"outputs[{n}]"
        if not isinstance(output, dict):
            errors.append((line, where, "must be an object with system and content"))
            continue
        start = len(errors)
        system, content, kind = output.get("system"), output.get("content"), output.get("kind", "text")
        refused = False  # a trajectory refused already, with the step and field named
        if kind == "trajectory" and content not in (None, ""):
            content = _trajectory_text(line, content, f"{where}.content", errors)
            refused = len(errors) > start
        if not isinstance(system, str) or not system.strip():
            errors.append((line, f"{where}.system", "required, a non-empty string"))
        elif len(system.strip()) > MAX_SYSTEM_LENGTH:
            errors.append((line, f"{where}.system", f"at most {MAX_SYSTEM_LENGTH} characters"))
        elif why := _text_problem(system):
            errors.append((line, f"{where}.system", why))
        if refused:
            pass
        elif not isinstance(content, str) or content == "":
            errors.append((line, f"{where}.content", "required, a non-empty string"))
        elif why := _text_problem(content):
            errors.append((line, f"{where}.content", why))
        if not isinstance(kind, str) or kind not in OUTPUT_KINDS:
            errors.append((line, f"{where}.kind", f"must be one of {sorted(OUTPUT_KINDS)}"))
        metadata = output.get("metadata", {}) or {}
        if not isinstance(metadata, dict):
            errors.append((line, f"{where}.metadata", "must be an object"))
        elif problem := _json_problem(metadata, f"{where}.metadata"):
            errors.append((line, *problem))
        if len(errors) == start:
            parsed.append(ParsedOutput(system.strip(), content, kind, metadata))
    systems = [o.system for o in parsed]
    if len(set(systems)) != len(systems):
        errors.append((line, "outputs", "two outputs of one item come from the same system"))
    return parsed
