"""Issue 56 §2 in the demo: simulated agent runs sent through the OTLP intake's own path under the study's
stored rule. Every run an evaluator marked unacceptable is kept with probability 1, of the rest those the
trace id picks at the rule's rate (as OpenTelemetry's TraceIdRatioBased sampler would), each with its
probability in the items download; the trajectories read back as the simulation wrote them."""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace.sampling import Decision, TraceIdRatioBased

from annotation import trajectory
from annotation.datasets import export_chunks
from annotation.demo_traffic import N_RUNS, RULE, SEED, TRAFFIC_SLUG, demo_traffic_install
from annotation.simulation.agent_traffic import traffic_spans
from annotation.traces import otel

pytestmark = pytest.mark.django_db


def test_the_demo_traffic_is_sampled_by_the_studys_rule(admin_user):
    study = demo_traffic_install(admin=admin_user, annotators=[], researchers=[])
    assert study.slug == TRAFFIC_SLUG and study.trace_sampling == RULE and study.status == "open"
    assert demo_traffic_install(admin=admin_user, annotators=[], researchers=[]) is None  # once
    spans = traffic_spans(SEED, N_RUNS)
    traces = otel.group_by_trace(spans)
    flagged = {t for t, s in traces.items() if "unacceptable" in otel.flag_labels(s)}
    sampler = TraceIdRatioBased(RULE["rate"])
    chosen = {t for t in set(traces) - flagged
              if sampler.should_sample(None, int(t, 16), "invoke_agent").decision == Decision.RECORD_AND_SAMPLE}
    assert (len(flagged), len(chosen), len(traces)) == (11, 7, N_RUNS)
    rows = [json.loads(x) for x in b"".join(export_chunks(study, "items-jsonl")).decode().splitlines()]
    got = {r["item"]: (r["trace_sampling"], r["inclusion_probability"]) for r in rows}
    assert got == {**{t: ("flagged", 1.0) for t in flagged}, **{t: ("random", 0.25) for t in chosen}}
    item = study.items.get(external_id=sorted(flagged)[0])
    run = trajectory.parse(item.outputs.get().content)
    assert [m["role"] for m in run["messages"]][:3] == ["system", "user", "assistant"]
    assert run["messages"][2]["tool_calls"] and run["messages"][-1]["role"] == "assistant"
    assert item.metadata["sampling"]["weight"] == 1.0
