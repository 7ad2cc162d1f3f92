"""POST /api/studies/<slug>/otlp/v1/traces: OTLP/HTTP trace export (JSON or protobuf) into a study.

Authorised by an API token of a user who may manage the study (`Authorization: Token <key>` or
`Bearer <key>`, as OpenTelemetry exporters' headers set it; a signed-in session with its CSRF token
works too, as on the rest of the API). Bounds, from the table of limits (config/limits.py, `otlp.*`):
the body's size (413), the spans per request (400, which exporters do not retry) and requests per token
per minute (429 with Retry-After, which they do). The sampling rule is the study's (`trace_sampling`,
annotation.traces.sampling); a study without one takes it from the query: `?sample=0.2&flag=unacceptable`.
"""

from __future__ import annotations

import time
import zlib

from django.core.cache import cache
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.decorators import api_view, authentication_classes, parser_classes, permission_classes
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.request import Request

from annotation.access import get_study_for_manager
from annotation.traces import otel
from annotation.traces.ingest import ingest_spans
from annotation.traces.sampling import SamplingRule, SamplingRuleError, rule_for_request
from annotation.traces.mapping import TraceFormatError
from config.limits import limit

PROTOBUF = "application/x-protobuf"


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"


class RawBody(BaseParser):
    """The body as bytes, at most limit("otlp.body") + 1 of them (the view says 413 above that). Form
    bodies still go to Django's parsers: a session's CSRF check reads its token from them."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None) -> bytes:
        return stream.read(limit("otlp.body") + 1) if stream is not None else b""


def _limits() -> tuple[int, int, int]:
    return limit("otlp.body"), limit("otlp.spans"), limit("otlp.per_token_per_minute")


def _reply(status: int, message: str, *, protobuf: bool, rejected: int = 0, headers: dict | None = None):
    if status == 200:
        body = otel.response_body(rejected, message, protobuf=protobuf)
    elif protobuf:
        from google.rpc.status_pb2 import Status  # OTLP/HTTP's error body for protobuf

        body = Status(code=3 if status == 400 else 8, message=message).SerializeToString()
    else:
        import json

        body = json.dumps({"code": 3 if status == 400 else 8, "message": message}).encode()
    response = HttpResponse(body, status=status, content_type=PROTOBUF if protobuf else "application/json")
    for key, value in (headers or {}).items():
        response[key] = value
    return response


def _clock() -> float:
    return time.time()


def _over_rate(token_key: str, per_minute: int) -> int:
    """Seconds until the token's window ends when it is over its rate, else 0 (a fixed minute window)."""
    now = _clock()
    window = int(now // 60)
    key = f"otlp:rate:{token_key[:12]}:{window}"
    cache.add(key, 0, 120)
    if cache.incr(key) > per_minute:
        return max(1, int(60 - now % 60))
    return 0


def _sampling_rule(request: Request, study) -> SamplingRule:
    try:
        return rule_for_request(study.trace_sampling, request.query_params.get("sample"),
                                request.query_params.get("flag"))
    except SamplingRuleError as exc:
        raise TraceFormatError("", str(exc).replace("trace_sampling.rate", "sample", 1)) from None


# The schema shows the JSON form; the same path takes application/x-protobuf (the SDK exporters' default).
@extend_schema(request={"application/json": OpenApiTypes.OBJECT},
               responses={200: OpenApiTypes.OBJECT, 413: OpenApiTypes.OBJECT, 429: OpenApiTypes.OBJECT},
               parameters=[OpenApiParameter("sample", float, description="share of unflagged traces kept (0-1), for a "
                                                                      "study without a stored rule"),
                           OpenApiParameter("flag", str, description="evaluation labels always kept, comma-separated "
                                                                     "(a study without a stored rule)")])
@api_view(["POST"])
@authentication_classes([TokenAuthentication, BearerTokenAuthentication, SessionAuthentication])
@permission_classes([permissions.IsAuthenticated])
@parser_classes([FormParser, MultiPartParser, RawBody])
def otlp_traces(request: Request, slug: str) -> HttpResponse:
    """Receive an OTLP/HTTP ExportTraceServiceRequest; GenAI traces become trajectory items."""
    study = get_study_for_manager(request.user, slug)
    content_type = (request.content_type or "").split(";")[0].strip().lower()
    protobuf = content_type == PROTOBUF
    if content_type not in (PROTOBUF, "application/json"):
        return _reply(415, f"Content-Type must be {PROTOBUF} or application/json, not {content_type!r}",
                      protobuf=False)
    max_body, max_spans, per_minute = _limits()
    wait = _over_rate(request.auth.key, per_minute)
    if wait:
        return _reply(429, f"more than {per_minute} requests a minute with this token", protobuf=protobuf,
                      headers={"Retry-After": str(wait)})
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > max_body:
        return _reply(413, f"the body is over {max_body} bytes", protobuf=protobuf)
    body = request.data
    if len(body) > max_body:
        return _reply(413, f"the body is over {max_body} bytes", protobuf=protobuf)
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").lower()
    try:
        if encoding == "gzip":
            body = _gunzip(body, max_body * 10)
        elif encoding not in ("", "identity"):
            return _reply(415, f"Content-Encoding {encoding!r} is not supported (gzip is)", protobuf=protobuf)
        rule = _sampling_rule(request, study)
        spans = (otel.spans_from_protobuf if protobuf else otel.spans_from_json)(body, max_spans=max_spans)
    except TraceFormatError as exc:
        return _reply(400, str(exc), protobuf=protobuf)
    result = ingest_spans(study, spans, rule)
    return _reply(200, "; ".join(result.messages)[:2000], protobuf=protobuf, rejected=result.rejected_spans)


def _gunzip(body: bytes, limit: int) -> bytes:
    """A gzip body inflated up to `limit` bytes (a small body must not unpack into gigabytes)."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise TraceFormatError("", f"the gzip body is corrupt ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise TraceFormatError("", f"the body inflates to over {limit} bytes")
    return out

