"""docs/reference/reports-and-exports.md: its tables of formats and columns are generated from the writers'
own schemas (annotation/export_reference.py); a column without a meaning, a format or block missing, or a
stale page fails here."""

from __future__ import annotations

from annotation.datasets import FORMATS
from annotation.export_reference import MEANINGS, PAGE, READ_BY, _schemas, block_names, render


def test_the_page_is_generated_from_the_code():
    text = PAGE.read_text()
    assert text == render(text), "stale: run `.venv/bin/python -m annotation.export_reference`"


def test_every_table_and_format_has_its_block_and_every_column_a_meaning():
    schemas = _schemas()
    assert set(block_names(PAGE.read_text())) == {"formats"} | {f"columns:{t}" for t in schemas}
    for table, columns in schemas.items():
        names = [name for name, _ in columns]
        assert set(names) == set(MEANINGS[table]), table  # no column without a meaning, no meaning left over
    assert set(READ_BY) == set(FORMATS)


def test_the_blocks_hold_every_column_and_format():
    text = PAGE.read_text()
    for key in FORMATS:
        assert f"| `{key}` |" in text
    for name in ("shown_position", "criterion_kind", "posterior", "to_check", "statistic"):
        assert f"| `{name}` |" in text
