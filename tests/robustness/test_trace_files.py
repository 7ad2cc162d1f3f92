"""Every trace-file reader (annotation/traces/files.py) and the OTLP/JSON decoder on damaged input: a
real file with one value anywhere replaced by any JSON value either reads to valid trajectories or is
refused with TraceFormatError naming where; never another exception (a 500 on the page or endpoint)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from annotation import trajectory
from annotation.traces import files, otel
from annotation.traces.mapping import TraceFormatError
from tests.robustness import profiles  # noqa: F401  (the reproducible Hypothesis profile)

FIXTURES = Path(__file__).parent.parent / "importers" / "files"
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)
SOURCES = {
    "langfuse": [json.loads((FIXTURES / "langfuse-trace.json").read_text())],
    "phoenix": [json.loads(line) for line in (FIXTURES / "phoenix-spans.jsonl").read_text().splitlines()],
    "openai-chat": [json.loads(line) for line in (FIXTURES / "openai-chat.jsonl").read_text().splitlines()],
    "openai-responses": [json.loads(line) for line in (FIXTURES / "openai-responses.jsonl").read_text().splitlines()],
}


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for n, child in enumerate(value):
            yield from _paths(child, (*prefix, n))


def _replaced(records: list, path: tuple, new) -> list:
    records = json.loads(json.dumps(records))
    if not path:
        return [new]
    node = records
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return records


@functools.cache
def _otlp_body() -> dict:
    from tests.importers.test_otlp import otlp_json  # the SDK's own encoding of an agent run

    return json.loads(otlp_json()[0])


def _check(data: bytes, fmt: str) -> None:
    try:
        rows = files.rows(data, fmt)
    except TraceFormatError as exc:
        assert exc.message
        return
    for row in rows:
        trajectory.parse(row["outputs"][0]["content"])


@settings(max_examples=300)
@given(fmt=st.sampled_from(sorted(SOURCES)), choice=st.integers(0, 10**6), new=JSON_VALUES)
def test_a_damaged_file_is_read_or_refused_by_name(fmt, choice, new):
    records = SOURCES[fmt]
    paths = list(_paths(records))[1:]
    damaged = _replaced(records, paths[choice % len(paths)], new)
    _check("\n".join(json.dumps(r) for r in damaged).encode(), fmt)


@settings(max_examples=150)
@given(choice=st.integers(0, 10**6), new=JSON_VALUES)
def test_a_damaged_otlp_request_is_read_or_refused_by_name(choice, new):
    body = _otlp_body()
    paths = list(_paths(body))[1:]
    damaged = _replaced([body], (0, *paths[choice % len(paths)]), new)[0]
    try:
        spans = otel.spans_from_json(json.dumps(damaged).encode(), max_spans=100)
        for trace_id, trace_spans in otel.group_by_trace(spans).items():
            if otel.is_genai_trace(trace_spans):
                otel.trace_row(trace_id, trace_spans)
    except TraceFormatError as exc:
        assert exc.message
