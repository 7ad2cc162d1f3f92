"""Item import through the service (items_import) on PostgreSQL: whatever the parser accepts is
stored as parsed, and a refused file leaves every table as it was."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotation.importers import ItemFileError
from annotation.models import Item, Output, Study
from annotation.services.items import items_import
from annotation.services.studies import study_create
from tests.robustness.strategies import json_values
from tests.robustness.test_item_files import BASE_ROWS, ITEM_FIELDS, OUTPUT_FIELDS, rows_to_csv, to_jsonl, write_csv

pytestmark = pytest.mark.django_db


def row_counts() -> tuple[int, int, int]:
    return Study.objects.count(), Item.objects.count(), Output.objects.count()


@pytest.fixture
def new_study(preset_version, admin_user):
    serial = iter(range(10**6))

    def _new():
        return study_create(name=f"Robustness {next(serial)}", rubric_version=preset_version["rrgen-001"],
                            user=admin_user)

    return _new


def as_json_numbers(value):
    """A JSON value with every number as a Decimal: jsonb keeps a number's decimal value, so
    1.0587857480454074e+17 comes back as the integer 105878574804540740, the same JSON number."""
    return json.loads(json.dumps(value), parse_float=Decimal, parse_int=Decimal)


def import_and_check(study, text: str, fmt: str) -> None:
    """The property: a refused file changes nothing; an accepted one is stored exactly as parsed."""
    before = row_counts()
    try:
        count = items_import(study=study, text=text, filename=f"items.{fmt}")
    except ItemFileError as exc:
        assert exc.errors and all(line >= 1 for line, _, _ in exc.errors)
        assert row_counts() == before
        return
    assert count == Item.objects.filter(study=study).count()
    from annotation.importers import parse_items

    expected = {p.external_id: p for p in parse_items(text, fmt=fmt)}
    for item in Item.objects.filter(study=study).prefetch_related("outputs"):
        parsed = expected[item.external_id]
        assert (item.context, item.context_kind) == (parsed.context, parsed.context_kind)
        assert as_json_numbers([item.metadata, item.gold]) == as_json_numbers([parsed.metadata, parsed.gold])
        stored = sorted(item.outputs.all(), key=lambda o: o.position)
        assert [(o.system, o.content, o.kind) for o in stored] == [(o.system, o.content, o.kind) for o in parsed.outputs]
        assert as_json_numbers([o.metadata for o in stored]) == as_json_numbers([o.metadata for o in parsed.outputs])


@settings(max_examples=60)
@given(index=st.integers(0, len(BASE_ROWS) - 1), target=st.sampled_from(ITEM_FIELDS + OUTPUT_FIELDS),
       value=json_values, ascii_only=st.booleans())
def test_any_one_field_changed_is_stored_as_parsed_or_changes_nothing(new_study, index, target, value, ascii_only):
    rows = json.loads(json.dumps(BASE_ROWS))
    if target in OUTPUT_FIELDS:
        rows[index]["outputs"][-1][target] = value
    else:
        rows[index][target] = value
    import_and_check(new_study(), to_jsonl(rows, ascii_only=ascii_only), "jsonl")


@settings(max_examples=40)
@given(index=st.integers(0, len(BASE_ROWS) - 1), data=st.data())
def test_any_one_csv_cell_changed_is_stored_as_parsed_or_changes_nothing(new_study, index, data):
    from tests.robustness.strategies import csv_cells

    header, records = rows_to_csv(BASE_ROWS)
    records[index][data.draw(st.sampled_from(header))] = data.draw(csv_cells())
    text, _ = write_csv(header, records)
    import_and_check(new_study(), text, "csv")


BAD_LAST_LINES = [
    '{"id": "bad", "outputs": []}',
    '{"id": "bad", "outputs": [{"system": "a", "content": "b\\u0000"}]}',
    '{"id": "bad", "outputs": [{"system": "a", "content": "b"}], "metadata": {"x": NaN}}',
    '{"id": "bad", "outputs": [{"system": "a", "content": "b"}], "gold": {"no_such_criterion": 1}}',
    '{"id": "rr-001", "outputs": [{"system": "a", "content": "b"}]}',
    "not json",
]


@pytest.mark.parametrize("bad", BAD_LAST_LINES)
def test_one_bad_line_imports_nothing(new_study, bad):
    study = new_study()
    before = row_counts()
    text = to_jsonl(BASE_ROWS, ascii_only=True) + bad + "\n"
    with pytest.raises(ItemFileError) as caught:
        items_import(study=study, text=text, filename="items.jsonl")
    assert {line for line, _, _ in caught.value.errors} == {len(BASE_ROWS) + 1}
    assert row_counts() == before
    # The same file without its bad line is accepted whole.
    assert items_import(study=study, text=to_jsonl(BASE_ROWS, ascii_only=True), filename="items.jsonl") == len(BASE_ROWS)
    assert Output.objects.filter(item__study=study).count() == sum(len(r["outputs"]) for r in BASE_ROWS)


def test_a_second_upload_with_one_clashing_id_adds_nothing(new_study):
    study = new_study()
    items_import(study=study, text=to_jsonl(BASE_ROWS[:2], ascii_only=True), filename="a.jsonl")
    before = row_counts()
    with pytest.raises(ItemFileError) as caught:
        items_import(study=study, text=to_jsonl(BASE_ROWS[2:] + BASE_ROWS[:1], ascii_only=True), filename="b.jsonl")
    assert caught.value.errors[0][:2] == (len(BASE_ROWS) - 1, "id")
    assert row_counts() == before


def test_upload_endpoint_refuses_a_bad_file_with_line_and_field(new_study, admin_user, api_for):
    from django.core.files.uploadedfile import SimpleUploadedFile

    study = new_study()
    before = row_counts()
    text = to_jsonl(BASE_ROWS, ascii_only=True) + '{"id": "x", "outputs": [{"system": "a", "content": "\\ud800"}]}\n'
    response = api_for(admin_user).post(f"/api/studies/{study.slug}/items/",
                                        {"file": SimpleUploadedFile("items.jsonl", text.encode())}, format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"][0] | {"message": ""} == {"line": len(BASE_ROWS) + 1, "field": "outputs[0].content",
                                                                "message": ""}
    assert row_counts() == before
