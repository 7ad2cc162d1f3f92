"""Item files (annotation.importers.parse_items), whatever their text: either a list of items or an
ItemFileError whose errors name a line and a field, never another exception. Pure: no database.

The storage half (whatever the parser accepts, PostgreSQL stores) is test_item_import_db.py.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from annotation.importers import ItemFileError, ParsedItem, parse_items
from rubrics.loader import load_preset
from tests.robustness.strategies import csv_cells, json_values

DEMO = Path(__file__).resolve().parents[2] / "annotation" / "demo"
PRESET = "rrgen-001"
CRITERIA = {c["key"] for c in load_preset(PRESET)["criteria"]}
BASE_ROWS = [json.loads(line) for line in (DEMO / f"{PRESET}.jsonl").read_text().splitlines() if line.strip()]
BASE_ROWS[0]["gold"] = {"fluency": 6, "decision": "ACCEPT"}
ITEM_FIELDS = ["id", "context", "context_kind", "outputs", "metadata", "gold", "attention_check"]
OUTPUT_FIELDS = ["system", "content", "kind", "metadata"]


def parse_or_error(text: str, fmt: str) -> list[ParsedItem] | ItemFileError:
    """The property every test checks: the parser's only failure is a well-formed ItemFileError."""
    try:
        items = parse_items(text, fmt=fmt, criteria_keys=CRITERIA)
    except ItemFileError as exc:
        assert exc.errors, "an ItemFileError must list at least one problem"
        n_lines = max(1, text.count("\n") + 1)
        for line, field, message in exc.errors:
            assert isinstance(line, int) and 1 <= line <= n_lines, (line, n_lines)
            assert isinstance(field, str) and isinstance(message, str) and message
        assert str(exc)
        return exc
    assert items and all(isinstance(i, ParsedItem) for i in items)
    return items


def errors_at(result: ItemFileError, line: int) -> list[tuple[str, str]]:
    return [(field, message) for ln, field, message in result.errors if ln == line]


def to_jsonl(rows: list[dict], *, ascii_only: bool) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=ascii_only) for r in rows) + "\n"


# ---------------------------------------------------------------- arbitrary text


@given(text=st.text(st.characters(exclude_categories=()), max_size=400), fmt=st.sampled_from(["jsonl", "csv"]))
def test_any_text_is_parsed_or_refused_cleanly(text, fmt):
    parse_or_error(text, fmt)


@given(rows=st.lists(st.one_of(st.dictionaries(st.sampled_from(ITEM_FIELDS + ["extra"]), json_values, max_size=7),
                               json_values), min_size=1, max_size=5),
       ascii_only=st.booleans())
def test_any_json_lines_are_parsed_or_refused_cleanly(rows, ascii_only):
    parse_or_error(to_jsonl(rows, ascii_only=ascii_only), "jsonl")


@given(header=st.lists(st.sampled_from(["id", "context", "context_kind", "metadata", "attention_check", "gold_fluency",
                                        "output_1_system", "output_1_content", "output_1_kind", "output_2_system",
                                        "output_2_content", "x"]), min_size=1, max_size=8),
       cells=st.lists(st.lists(csv_cells(), max_size=9), min_size=1, max_size=4))
def test_any_csv_table_is_parsed_or_refused_cleanly(header, cells):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(cells)
    parse_or_error(out.getvalue(), "csv")


# ---------------------------------------------------------------- a valid file with one field changed


@st.composite
def mutated_jsonl(draw):
    """The demo file with one field of one line replaced by any JSON value (or removed, or added)."""
    rows = json.loads(json.dumps(BASE_ROWS))
    index = draw(st.integers(0, len(rows) - 1))
    row = rows[index]
    target = draw(st.sampled_from(ITEM_FIELDS + ["outputs[]", "unknown"]))
    value = draw(json_values)
    if target == "outputs[]":
        n = draw(st.integers(0, len(row["outputs"]) - 1))
        key = draw(st.sampled_from(OUTPUT_FIELDS))
        row["outputs"][n][key] = value
        field = "outputs"
    elif target == "unknown":
        field = draw(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(lambda k: k not in row))
        row[field] = value
    elif draw(st.booleans()) and target in row:
        del row[target]
        field = target
    else:
        row[target] = value
        field = target
    others = {str(r["id"]) for i, r in enumerate(rows) if i != index}
    return rows, index + 1, field, row, others, draw(st.booleans())


@given(case=mutated_jsonl())
def test_one_changed_field_of_a_jsonl_file_is_named_or_accepted(case):
    rows, line, field, row, other_ids, ascii_only = case
    new_id = row.get("id")
    assume(not (isinstance(new_id, (str, int)) and str(new_id).strip() in other_ids))  # a duplicate id is a different test
    result = parse_or_error(to_jsonl(rows, ascii_only=ascii_only), "jsonl")
    if isinstance(result, ItemFileError):
        named = errors_at(result, line)
        assert named, f"no error names line {line}: {result}"
        assert all(f == field or f.startswith((field + ".", field + "[")) or f == "" for f, _ in named), named
        assert len(result.errors) == len(named), "only the changed line may be refused"
    else:
        parsed = result[line - 1]
        assert parsed.line == line
        if field == "context":
            assert parsed.context == row.get("context", "")
        if field == "metadata" and isinstance(row.get("metadata"), dict):
            assert parsed.metadata == row["metadata"]


def test_a_json_string_holding_a_line_separator_stays_one_line():
    # json.dumps(ensure_ascii=False) writes U+2028 as is; JSONL lines end only at "\n".
    row = {**BASE_ROWS[0], "context": "first\u2028second\x85third"}
    (item, *_) = parse_items(to_jsonl([row, *BASE_ROWS[1:]], ascii_only=False), fmt="jsonl")
    assert item.context == "first\u2028second\x85third"


def rows_to_csv(rows: list[dict]) -> tuple[list[str], list[dict[str, str]]]:
    header = ["id", "context", "context_kind", "metadata", "attention_check"]
    n_out = max(len(r["outputs"]) for r in rows)
    header += [f"output_{n}_{k}" for n in range(1, n_out + 1) for k in ("system", "content", "kind")]
    gold_keys = sorted({k for r in rows for k in r.get("gold", {})})
    header += [f"gold_{k}" for k in gold_keys]
    records = []
    for r in rows:
        rec = {"id": str(r["id"]), "context": r.get("context", ""), "context_kind": r.get("context_kind", "text"),
               "metadata": json.dumps(r.get("metadata", {})), "attention_check": ""}
        for n, o in enumerate(r["outputs"], start=1):
            rec.update({f"output_{n}_system": o["system"], f"output_{n}_content": o["content"],
                        f"output_{n}_kind": o.get("kind", "text")})
        rec.update({f"gold_{k}": str(v) for k, v in r.get("gold", {}).items()})
        records.append(rec)
    return header, records


def write_csv(header: list[str], records: list[dict]) -> tuple[str, list[int]]:
    """The CSV text and, per record, the line on which it ends (what csv.reader.line_num reports)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, restval="")
    writer.writeheader()
    ends = []
    for rec in records:
        writer.writerow(rec)
        ends.append(out.getvalue().count("\n"))
    return out.getvalue(), ends


def column_field(column: str) -> str:
    if column.startswith("output_"):
        return "outputs"
    if column.startswith("gold_"):
        return "gold"
    return column


@given(data=st.data())
def test_one_changed_cell_of_a_csv_file_is_named_or_accepted(data):
    header, records = rows_to_csv(BASE_ROWS)
    index = data.draw(st.integers(0, len(records) - 1))
    column = data.draw(st.sampled_from(header))
    value = data.draw(csv_cells())
    if column == "id":
        assume(value.strip() not in {r["id"] for i, r in enumerate(records) if i != index})
    records[index][column] = value
    text, ends = write_csv(header, records)
    result = parse_or_error(text, "csv")
    if isinstance(result, ItemFileError):
        named = errors_at(result, ends[index])
        assert named, f"no error names line {ends[index]}: {result}"
        field = column_field(column)
        assert all(f == field or f.startswith((field + ".", field + "[")) for f, _ in named), (column, named)
        assert len(result.errors) == len(named), "only the changed row may be refused"
    else:
        assert [i.external_id for i in result] == [r["id"].strip() for r in records]


def test_csv_keeps_a_long_cell():
    # HTML and code outputs run past the csv module's default field limit (128 KiB), up to the limits table's.
    header, records = rows_to_csv(BASE_ROWS)
    records[1]["output_1_content"] = "<p>" + "x" * 190_000 + "</p>"
    text, _ = write_csv(header, records)
    items = parse_items(text, fmt="csv", criteria_keys=CRITERIA)
    assert len(items[1].outputs[0].content) == 190_007 > 128 * 1024


def test_a_byte_order_mark_is_not_part_of_the_first_column():
    header, records = rows_to_csv(BASE_ROWS)
    text, _ = write_csv(header, records)
    assert [i.external_id for i in parse_items("\ufeff" + text, fmt="csv")] == [r["id"] for r in records]
    assert len(parse_items("\ufeff" + to_jsonl(BASE_ROWS, ascii_only=True), fmt="jsonl")) == len(BASE_ROWS)


# ---------------------------------------------------------------- values PostgreSQL cannot store


def with_change(index: int, change) -> str:
    rows = json.loads(json.dumps(BASE_ROWS))
    change(rows[index])
    return to_jsonl(rows, ascii_only=True)


UNSTORABLE = {
    "NUL in the context": (lambda r: r.update(context="a\x00b"), "context"),
    "unpaired surrogate in an output": (lambda r: r["outputs"][1].update(content="x\ud800"), "outputs[1].content"),
    "NUL in a metadata key": (lambda r: r.update(metadata={"k\x00": 1}), "metadata"),
    "NaN in metadata": (lambda r: r.update(metadata={"score": float("nan")}), "metadata"),
    "infinity in gold": (lambda r: r.update(gold={"fluency": float("inf")}), "gold.fluency"),
    "system name over 200 characters": (lambda r: r["outputs"][0].update(system="m" * 201), "outputs[0].system"),
    "NUL in the id": (lambda r: r.update(id="rr\x00"), "id"),
}


@pytest.mark.parametrize("case", UNSTORABLE, ids=list(UNSTORABLE))
def test_values_the_database_cannot_store_are_refused_with_line_and_field(case):
    change, field = UNSTORABLE[case]
    text = with_change(1, change)
    with pytest.raises(ItemFileError) as caught:
        parse_items(text, fmt="jsonl", criteria_keys=CRITERIA)
    ((line, named, _),) = caught.value.errors
    assert line == 2 and (named == field or named.startswith(field + ".")), caught.value.errors


def test_json_numbers_beyond_float_or_int_limits_are_refused_with_the_line():
    huge_float = to_jsonl(BASE_ROWS[:1], ascii_only=True) + '{"id": "x", "outputs": [{"system": "a", "content": "b"}], "metadata": {"n": 1e999}}\n'
    with pytest.raises(ItemFileError) as caught:
        parse_items(huge_float, fmt="jsonl")
    ((line, named, _),) = caught.value.errors
    assert line == 2 and named.startswith("metadata"), caught.value.errors
    many_digits = '{"id": "x", "outputs": [{"system": "a", "content": "b"}], "metadata": {"n": ' + "9" * 5000 + "}}\n"
    with pytest.raises(ItemFileError) as caught:
        parse_items(many_digits, fmt="jsonl")
    assert [line for line, _, _ in caught.value.errors] == [1]


@pytest.mark.parametrize("cell", ["nan", "inf", "-Infinity", "1e999"])
def test_csv_gold_cells_that_are_not_finite_numbers_are_kept_as_text(cell):
    header, records = rows_to_csv(BASE_ROWS)
    records[0]["gold_fluency"] = cell
    text, _ = write_csv(header, records)
    (first, *_) = parse_items(text, fmt="csv", criteria_keys=CRITERIA)
    assert first.gold["fluency"] == cell
    json.dumps(first.gold, allow_nan=False)
