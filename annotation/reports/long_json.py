"""The long format as JSON lines written in Arrow (the JSONL export), byte for byte what
PostgreSQL's json_build_object over `ratings.long_json_sql` writes (that query is the reference
the tests compare with).

Building the JSON in PostgreSQL cost about five times the server CPU per row of reading the same
rows as ids and text (long_arrow's read, which Parquet uses): on two cores the server was most of
an export's time. Here PostgreSQL still writes every value's text (float8, jsonb and the
timestamp's JSON form come from its own output functions), and Arrow only quotes, escapes and
joins, per column rather than per row.
"""

from __future__ import annotations

import re
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from annotation.models import Study
from annotation.reports.rating_sql import EXPORT_VALUE
from annotation.reports.long_arrow import criterion_keys, id_tables, shown_positions

# (name, SQL, type): the columns json_build_object would turn into JSON, as text PostgreSQL wrote.
JSON_ID_COLUMNS = (
    ("assignment", "a.id", pa.int64()),  # a run of rows with one id shares the assignment's columns
    ("item_id", "a.item_id", pa.int64()),
    ("output_id", "r.output_id", pa.int64()),
    ("rater_id", "a.rater_id", pa.int64()),
    ("criterion", "r.criterion", pa.string()),
    ("value", f"({EXPORT_VALUE})::text", pa.string()),  # jsonb's own text, nested as it is
    ("score", "r.score", pa.string()),  # float8's text, as json_build_object writes a number
    ("reasoning", "r.reasoning", pa.string()),
    ("ignored", "a.ignored", pa.bool_()),
    ("ignore_reason", "a.ignore_reason", pa.string()),
    ("comment", "a.comment", pa.string()),
    ("time_on_task_ms", "a.time_on_task_ms", pa.string()),
    ("permutation", "a.permutation::text", pa.string()),
    ("is_attention_check", "a.is_attention_check", pa.bool_()),
    ("submitted_at", "to_json(a.submitted_at)::text", pa.string()),  # quoted ISO 8601, in the session's zone
    ("sampling", "NULLIF(a.sampling, '')", pa.string()),
    ("sampling_probability", "a.sampling_probability", pa.string()),  # float8's text, as for score
)

LINES_PER_CHUNK = 65_536
# PostgreSQL's escape_json: these seven by name, any other character below a space as \\u00XX.
_NAMED_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), ("\b", "\\b"), ("\f", "\\f"), ("\n", "\\n"), ("\r", "\\r"),
                  ("\t", "\\t"))
_OTHER_CONTROL = r"[\x00-\x1f]"
_OTHER_CONTROL_RE = re.compile(_OTHER_CONTROL)
# json_build_object writes a float8 whose text is no JSON number as a string.
_NOT_JSON_NUMBERS = pa.array(["NaN", "Infinity", "-Infinity"])


def json_strings(values: pa.Array) -> pa.Array:
    """Each string quoted and escaped as PostgreSQL's escape_json does; SQL NULL as null."""
    if pa.types.is_dictionary(values.type):  # few distinct values: escape those only
        return pc.fill_null(pc.take(json_strings(values.dictionary), values.indices), "null")
    out = values
    for raw, escaped in _NAMED_ESCAPES:
        out = pc.replace_substring(out, raw, escaped)
    rare = pc.fill_null(pc.match_substring_regex(out, _OTHER_CONTROL), False)
    if pc.any(rare).as_py():  # rare control characters: in Python, row by row
        texts = out.to_pylist()
        for i in np.flatnonzero(rare.to_numpy(zero_copy_only=False)):
            texts[i] = _OTHER_CONTROL_RE.sub(lambda m: "\\u%04x" % ord(m.group()), texts[i])
        out = pa.array(texts, pa.string())
    return pc.fill_null(pc.binary_join_element_wise('"', out, '"', ""), "null")


def _numbers(values: pa.Array) -> pa.Array:
    text = values if pa.types.is_string(values.type) else pc.cast(values, pa.string())
    quoted = pc.fill_null(pc.is_in(text, value_set=_NOT_JSON_NUMBERS), False)
    if pc.any(quoted).as_py():
        text = pc.if_else(quoted, json_strings(text), text)
    return pc.fill_null(text, "null")


def _booleans(values: pa.Array) -> pa.Array:
    return pc.fill_null(pc.if_else(values, "true", "false"), "null")


def _raw(values: pa.Array) -> pa.Array:
    return pc.fill_null(values, "null")


class _JsonNames:
    """The names of long_arrow's lookups, quoted and escaped once per export."""

    def __init__(self, names):
        self.names = names
        self.items = json_strings(names.items.names)
        self.raters = json_strings(names.raters.names)
        # Per output: its position and system, as one piece of a line.
        self.outputs = pc.binary_join_element_wise(', "output" : ', _numbers(names.outputs.extra), ', "system" : ',
                                                   json_strings(names.outputs.names), "")
        self.kinds = names.kinds

    def lines(self, ids: pa.Table) -> bytes:
        """The JSON lines of a table of JSON_ID_COLUMNS, keys in LONG_NAMES order (json_build_object's
        spacing: {"k" : v, "k" : v}). Keys whose values come together are joined as one piece: an
        output's position and system, a criterion and its kind, and the assignment's columns, made once
        per assignment (its rows are consecutive) rather than once per rating."""
        names = self.names
        output = names.outputs.index(ids["output_id"])
        position = pc.take(names.outputs.extra, output)
        criterion = ids["criterion"].combine_chunks()
        kind_at = pc.index_in(criterion_keys(criterion), value_set=names.kind_keys)
        spans = pc.fill_null(pc.equal(pc.take(self.kinds, kind_at), "spans"), False)
        value = ids["value"].combine_chunks()
        no_value = pa.nulls(len(ids), pa.string())
        first, run = _runs(ids["assignment"].to_numpy())
        per_assignment = ids.take(first)
        head, middle, before_shown, after_shown = (pc.take(piece, run)
                                                   for piece in self._assignment_pieces(per_assignment))
        lines = pc.binary_join_element_wise(
            head,
            pc.fill_null(pc.take(self.outputs, output), ', "output" : null, "system" : null'),
            middle,
            _criterion_pieces(criterion, self.kinds, names.kind_keys),
            ', "value" : ', _raw(pc.if_else(spans, no_value, value)),
            ', "score" : ', _numbers(ids["score"].combine_chunks()),
            ', "reasoning" : ', json_strings(ids["reasoning"].combine_chunks()),
            ', "spans" : ', _raw(pc.if_else(spans, value, no_value)),
            before_shown,
            ', "shown_position" : ', _numbers(shown_positions(ids["permutation"], position)),
            after_shown,
            "")
        assert lines.null_count == 0, "a column left a SQL NULL unwritten"  # a null would drop its row
        return _buffer_bytes(lines)

    def _assignment_pieces(self, rows: pa.Table):
        """Per assignment: '{"item" : …', ', "rater" : …' and the two runs of its columns after spans."""
        names = self.names
        head = pc.binary_join_element_wise('{"item" : ', pc.take(self.items, names.items.index(rows["item_id"])), "")
        middle = pc.binary_join_element_wise(', "rater" : ', pc.take(self.raters, names.raters.index(rows["rater_id"])),
                                             "")
        before_shown = pc.binary_join_element_wise(
            ', "ignored" : ', _booleans(rows["ignored"].combine_chunks()),
            ', "ignore_reason" : ', json_strings(rows["ignore_reason"].combine_chunks()),
            ', "comment" : ', json_strings(rows["comment"].combine_chunks()),
            ', "time_on_task_ms" : ', _raw(rows["time_on_task_ms"].combine_chunks()), "")
        after_shown = pc.binary_join_element_wise(
            ', "is_attention_check" : ', _booleans(rows["is_attention_check"].combine_chunks()),
            ', "submitted_at" : ', _raw(rows["submitted_at"].combine_chunks()),
            ', "sampling" : ', json_strings(rows["sampling"].combine_chunks()),
            ', "sampling_probability" : ', _numbers(rows["sampling_probability"].combine_chunks()), "}\n", "")
        return head, middle, before_shown, after_shown


def _criterion_pieces(criterion: pa.Array, kinds: pa.Array, kind_keys: pa.Array) -> pa.Array:
    """', "criterion" : …, "criterion_kind" : …' per row, made once per distinct criterion."""
    encoded = criterion.dictionary_encode()
    keys = encoded.dictionary
    kind = pc.take(kinds, pc.index_in(criterion_keys(keys), value_set=kind_keys))
    pieces = pc.binary_join_element_wise(', "criterion" : ', json_strings(keys), ', "criterion_kind" : ',
                                         json_strings(kind), "")
    return pc.fill_null(pc.take(pieces, encoded.indices), ', "criterion" : null, "criterion_kind" : null')


def _runs(assignments: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """(the first row of each run of equal assignment ids, each row's run number)."""
    starts = np.ones(len(assignments), dtype=bool)
    starts[1:] = assignments[1:] != assignments[:-1]
    return np.flatnonzero(starts), pa.array(np.cumsum(starts) - 1)


def _buffer_bytes(lines: pa.Array) -> bytes:
    """A string array's values, back to back: each line ends with its newline."""
    if len(lines) == 0:
        return b""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    return lines.buffers()[2].slice(start, end - start).to_pybytes()


def rating_json_lines(study: Study) -> Iterator[bytes]:
    """The long format as JSON lines, in chunks of whole lines, in long_sql's order."""
    json_names = None
    for names, ids in id_tables(study, JSON_ID_COLUMNS):
        if json_names is None or json_names.names is not names:
            json_names = _JsonNames(names)
        for start in range(0, len(ids), LINES_PER_CHUNK):  # a range's lines are 100 MB and more
            if data := json_names.lines(ids.slice(start, LINES_PER_CHUNK)):
                yield data
