"""OTLP traces into a study: spans grouped per trace, a trace made an item once its root span has
arrived, sampled, imported all or nothing per request (annotation.services.items).

Spans of one trace may come in several requests (the SDK's BatchSpanProcessor exports what has
ended, and the root span ends last), so the spans of a trace whose root has not come yet wait in
the cache for an hour (then they are dropped). The root is the span without a parent, or an
`invoke_agent` span whose parent is remote (not among the trace's spans). A trace already imported is skipped, so a retried request adds nothing twice.

Sampling: the study's rule (annotation.traces.sampling) decides per trace once its root has come;
each kept trace records its inclusion probability in metadata.sampling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.core.cache import cache

from annotation.importers import ItemFileError
from annotation.models import Study
from annotation.services.items import items_import
from annotation.traces import otel
from annotation.traces.mapping import Span, TraceFormatError
from annotation.traces.sampling import SamplingRule

PENDING_SECONDS = 3600
MAX_PENDING_SPANS = 5000  # spans of one trace held while its root span has not come


@dataclass
class IngestResult:
    imported: int = 0
    sampled_out: int = 0
    pending: int = 0  # traces waiting for their root span
    skipped: int = 0  # traces already imported, or with no GenAI span
    rejected_spans: int = 0
    messages: list[str] = field(default_factory=list)


def _has_root(spans: list[Span]) -> bool:
    """The trace's root has come: a span without a parent, or an agent's span whose parent is not
    here (the agent was called by a service that sends its spans elsewhere: a remote parent)."""
    ids = {s.span_id for s in spans}
    return any(not s.parent_id or (s.attributes.get("gen_ai.operation.name") == "invoke_agent"
                                   and s.parent_id not in ids) for s in spans)


def _pending_key(study: Study, trace_id: str) -> str:
    return f"otlp:pending:{study.pk}:{trace_id}"


def ingest_spans(study: Study, spans: list[Span], rule: SamplingRule) -> IngestResult:
    result = IngestResult()
    existing = set(study.items.filter(external_id__in=list({s.trace_id for s in spans}))
                   .values_list("external_id", flat=True))
    rows: list[dict] = []
    row_spans = 0
    for trace_id, trace_spans in otel.group_by_trace(spans).items():
        if trace_id in existing:
            result.skipped += 1
            continue
        held = cache.get(_pending_key(study, trace_id))
        if held:
            trace_spans = held + trace_spans
        if not _has_root(trace_spans):
            if len(trace_spans) > MAX_PENDING_SPANS:
                result.rejected_spans += len(trace_spans)
                result.messages.append(f"trace {trace_id}: more than {MAX_PENDING_SPANS} spans without a root span")
                cache.delete(_pending_key(study, trace_id))
            else:
                cache.set(_pending_key(study, trace_id), trace_spans, PENDING_SECONDS)
                result.pending += 1
            continue
        if held:
            cache.delete(_pending_key(study, trace_id))
        if not otel.is_genai_trace(trace_spans):
            result.skipped += 1
            continue
        sampling = rule.decide(trace_id, otel.flag_labels(trace_spans))
        if sampling is None:
            result.sampled_out += 1
            continue
        try:
            row = otel.trace_row(trace_id, trace_spans)
        except TraceFormatError as exc:
            result.rejected_spans += len(trace_spans)
            result.messages.append(str(exc))
            continue
        row["metadata"]["sampling"] = sampling
        rows.append(row)
        row_spans += len(trace_spans)
    if rows:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        try:
            result.imported = items_import(study=study, text=text, fmt="jsonl")
        except ItemFileError as exc:
            result.rejected_spans += row_spans
            result.messages.append(str(exc))
    return result
