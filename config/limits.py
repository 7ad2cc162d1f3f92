"""Every size, count and rate Concord accepts, in one table: what the input checks enforce, what
docs/reference/limits.md shows (generated from LIMITS by docs/hooks/reference.py) and what the tests
walk (each limit at its value and one past it; every stored TextField named here or bounded by its
own max_length).

    limit("assignment.comment") -> 10000         # the value, or settings.CONCORD_LIMITS' override
    text_problem("assignment.comment", text)     # "comment: at most 10,000 characters (this has 10,001)"
    clip("release.error", text)                  # text Concord writes itself, cut to its bound

Text limits count characters (what a person types), byte limits bytes. A limit whose `field` names a
model field bounds that field; one written by Concord itself (`written_by_concord`) is clipped where
it is written rather than refused.
"""

from __future__ import annotations

from dataclasses import dataclass

KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class Limit:
    key: str
    value: int
    unit: str  # characters, bytes, items, per hour, per minute, at once
    what: str  # where it applies, in the users' words
    fields: tuple[str, ...] = ()  # "app_label.Model.field" it bounds
    written_by_concord: bool = False  # clipped where written, never refused


LIMITS: dict[str, Limit] = {lim.key: lim for lim in (
    # Text people type.
    Limit("study.instructions", 50_000, "characters", "A study's instructions (study form, settings, API).",
          ("annotation.Study.instructions",)),
    Limit("study_change.value", 50_000, "characters", "A setting's old and new value in the study's change log.",
          ("annotation.StudyChange.old", "annotation.StudyChange.new"), written_by_concord=True),
    Limit("item.context", 200_000, "characters", "An item's context (item upload).", ("annotation.Item.context",)),
    Limit("item.explanation", 20_000, "characters", "A training item's explanation (item upload).",
          ("annotation.Item.explanation",)),
    Limit("output.content", 200_000, "characters", "An output's text (item upload).", ("annotation.Output.content",)),
    Limit("assignment.comment", 10_000, "characters", "A rater's comment on an item (submit and draft, form and API).",
          ("annotation.Assignment.comment",)),
    Limit("assignment.ignore_reason", 1_000, "characters", "Why a rater ignores an item (submit and draft).",
          ("annotation.Assignment.ignore_reason",)),
    Limit("rating.reasoning", 20_000, "characters", "A rater's reasoning for one answer (submit and draft).",
          ("annotation.Rating.reasoning",)),
    Limit("rating.text", 20_000, "characters", "A free-text answer to a text criterion."),
    Limit("release.changelog", 10_000, "characters", "A release's changelog (datasets page and API).",
          ("annotation.DatasetRelease.changelog",)),
    Limit("judge.description", 5_000, "characters", "A judge's description (judge file, API).",
          ("judges.JudgeConfig.description",)),
    Limit("questionnaire.text", 2_000, "characters", "A text answer in a participant's questionnaire (phases)."),
    # Text Concord writes: provider answers and error messages, clipped.
    Limit("error.text", 4_000, "characters", "An error or pause reason recorded on a release, run, batch or call.",
          ("annotation.DatasetRelease.error", "judges.JudgeRun.error", "judges.JudgeRun.pause_reason",
           "judges.JudgeBatch.error", "judges.JudgeBatchRequest.error"), written_by_concord=True),
    Limit("judge.raw_text", 200_000, "characters", "A judge's answer as returned by its provider.",
          ("judges.JudgeScore.raw_text",), written_by_concord=True),
    Limit("judge.reasoning", 50_000, "characters", "A judge's reasoning, parsed from its answer.",
          ("judges.JudgeScore.reasoning",), written_by_concord=True),
    # Bodies and lists.
    Limit("request.body", 4 * MiB, "bytes", "A request's body other than uploaded files: a form or the API's JSON "
          "(Django's DATA_UPLOAD_MAX_MEMORY_SIZE; past it: 413)."),
    Limit("assignment.draft", 512 * KiB, "bytes", "A saved draft of a rater's answers, as JSON."),
    Limit("rating.spans", 200, "items", "Highlights in one answer."),
    Limit("members.per_add", 5_000, "items", "Members added to a study in one request."),
    Limit("phases.text", 200_000, "characters", "A study's participant phases as YAML or JSON (manage page)."),
    # Uploaded files, each refused by its size before it is read.
    Limit("request.upload", 128 * MiB, "bytes", "A request that carries files, in all (past it: 413 before "
          "the body is read)."),
    Limit("upload.items", 100 * MiB, "bytes", "An items file (JSONL or CSV; manage page and API)."),
    Limit("upload.rubric", 1 * MiB, "bytes", "A rubric file (YAML or JSON; new study page and API)."),
    Limit("upload.members", 5 * MiB, "bytes", "A members CSV (manage page)."),
    Limit("upload.judges", 1 * MiB, "bytes", "A judges file or pasted configuration (judges page)."),
    Limit("upload.gold", 20 * MiB, "bytes", "A gold labels CSV (a study's gold evaluation page)."),
    Limit("upload.traces", 200 * MiB, "bytes", "A trace or log file, read whole (`import_items`; an upload through "
          "the site or the API meets upload.items first)."),
    Limit("traces.spans_per_file", 200_000, "items", "Spans in one OTLP/JSON trace file, over all its lines (past it: "
          "the file is refused, naming the line)."),
    # Rates and concurrency, per study.
    Limit("releases.per_study_per_hour", 48, "per hour", "Release builds queued for one study in an hour "
          "(one per format of a version); past it: 429."),
    Limit("builds.per_study_at_once", 24, "at once", "Release builds of one study pending or building at once; "
          "past it: 429."),
    Limit("exports.per_study_per_hour", 120, "per hour", "Live exports (datasets page and API) of one study in "
          "an hour; past it: 429."),
    # OpenTelemetry traces sent to a study (OTLP/HTTP, annotation/traces/api.py).
    Limit("otlp.body", 5 * MiB, "bytes", "An OTLP/HTTP trace request's body (past it: 413; a gzip body may "
          "inflate to ten times this)."),
    Limit("otlp.spans", 2_000, "items", "Spans in one OTLP/HTTP trace request (past it: 400, which exporters do "
          "not retry: send smaller batches)."),
    Limit("otlp.per_token_per_minute", 120, "per minute", "OTLP/HTTP trace requests with one API token in a "
          "minute; past it: 429 with Retry-After, which exporters honour."),
)}


def limit(key: str) -> int:
    """The limit's value; settings.CONCORD_LIMITS (the environment's JSON) may override it."""
    from django.conf import settings

    return int(getattr(settings, "CONCORD_LIMITS", {}).get(key, LIMITS[key].value))


def field_limits() -> dict[str, Limit]:
    """"app_label.Model.field" -> the limit that bounds it."""
    return {field: lim for lim in LIMITS.values() for field in lim.fields}


def text_problem(key: str, text: str, *, name: str | None = None) -> str | None:
    """What is wrong with `text` for the limit `key`, naming the field and the limit; None when it fits."""
    most = limit(key)
    if len(text) <= most:
        return None
    return f"{name or key.rpartition('.')[2]}: at most {most:,} characters (this has {len(text):,})"


def upload_problem(key: str, upload, *, name: str) -> str | None:
    """What is wrong with an uploaded file's size for the limit `key`; None when it fits (or no file).
    Asked before the file is read, so an oversized file is never parsed."""
    most = limit(key)
    if upload is None or upload.size <= most:
        return None
    return f"{name}: at most {most:,} bytes (this file has {upload.size:,})"


def upload_validator(key: str, *, name: str):
    """A validator for a form's or serializer's file field (both take Django's ValidationError)."""

    def check(upload) -> None:
        from django.core.exceptions import ValidationError

        if problem := upload_problem(key, upload, name=name):
            raise ValidationError(problem, code="too_large")

    return check


def clip(key: str, text: str) -> str:
    """Text Concord writes itself, cut to its limit (an ellipsis marks the cut)."""
    most = limit(key)
    return text if len(text) <= most else text[:most - 1] + "…"


class QuotaExceeded(Exception):
    """A study's rate or concurrency limit is reached: answered with 429 and this message."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)
