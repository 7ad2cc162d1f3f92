"""Providers' batch APIs over already-built requests: OpenAI's Batch API and Anthropic's Message
Batches. No Django; plain HTTP (httpx), the key from the environment variable the judge names.
Each request's body is the one the judge's provider profile builds for a single call
(judges.providers.build_request) and each answer is read back by the same profile, so a batch
asks exactly what the run would ask one call at a time.

OpenAI (platform.openai.com/docs/guides/batch, /docs/api-reference/batch): the requests go up as a
JSONL file (POST /v1/files, purpose "batch"; one line {custom_id, method, url, body}), then POST
/v1/batches {input_file_id, endpoint, completion_window: "24h"}; GET /v1/batches/{id} reports
validating, failed, in_progress, finalizing, completed, expired, cancelling or cancelled. When it
ends, GET /v1/files/{output_file_id}/content holds {custom_id, response: {status_code, body}} lines
and the error file the failed ones (an expired batch's unfinished requests as code batch_expired).
One batch serves one endpoint.

Anthropic (docs.anthropic.com/en/docs/build-with-claude/batch-processing, /en/api/creating-message-
batches): POST /v1/messages/batches {requests: [{custom_id, params}]}; GET .../{id} reports
processing_status in_progress, canceling or ended; once ended, its results_url holds lines
{custom_id, result: {type: succeeded (message) | errored (error) | canceled | expired}}.
custom_id is at most 64 of [a-zA-Z0-9_-]: ours is a sha256 in hex.

Both halve the price (judges.services.engine.BATCH_DISCOUNT).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.backends.errors import BackendError, PermanentBackendError, RetryableBackendError
from judges.backends.tls import tls_context
from judges.egress import check_endpoint, guard_transport
from judges.providers import build_request, get_provider, read_response, settings_from_judge
from judges.providers.base import RETRYABLE_STATUS, api_key

OPENAI_ENDED = {"failed", "completed", "expired", "cancelled"}
ANTHROPIC_RETRYABLE = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}


@dataclass
class BatchState:
    status: str  # the provider's own word
    ended: bool
    failed: bool = False  # the whole batch was refused (OpenAI "failed": its input did not validate)
    counts: dict[str, int] = field(default_factory=dict)
    error: str = ""


@dataclass
class BatchOutcome:
    custom_id: str
    response: JudgeResponse | None = None
    error: str = ""
    retry: bool = False  # expired, canceled or a transient failure: ask again in a new batch


def request_to_dict(request: JudgeRequest) -> dict[str, Any]:
    return dataclasses.asdict(request)


def request_from_dict(d: dict[str, Any]) -> JudgeRequest:
    d = dict(d)
    for key in ("stop", "allowed_tokens"):
        if d.get(key) is not None:
            d[key] = tuple(d[key])
    return JudgeRequest(**d)


class BatchAPI:
    name = "base"

    def __init__(self, judge: dict[str, Any]) -> None:
        self.judge = judge
        self.settings = settings_from_judge(judge)
        self.base_url = self.settings.base_url.rstrip("/")
        self.model = judge["model"]
        self.timeout_s = float((judge.get("backend_options") or {}).get("timeout_s") or 120.0)

    def _client(self) -> Any:
        import httpx

        headers = get_provider(self.settings.provider).headers(self.settings, api_key(self.settings))
        headers.pop("Content-Type", None)  # httpx sets it per request (JSON, or multipart for a file)
        check_endpoint(self.base_url)
        transport = guard_transport(httpx.HTTPTransport(verify=tls_context()), sync=True)  # judges.egress
        return httpx.Client(headers=headers, timeout=self.timeout_s, transport=transport)

    def built(self, request: JudgeRequest) -> Any:
        """The single-call HTTP request the judge's provider builds (no key: the batch call carries it)."""
        return build_request(self.judge, request, key="")

    def answer(self, body: dict[str, Any]) -> JudgeResponse:
        return read_response(self.judge, 200, body)

    @staticmethod
    def _check(resp: Any, what: str) -> Any:
        if resp.status_code == 200:
            return resp
        cls = RetryableBackendError if resp.status_code in RETRYABLE_STATUS or resp.status_code >= 500 \
            else PermanentBackendError
        raise cls(f"{what}: {resp.status_code} {resp.text[:500]}", status=resp.status_code, body=resp.text[:2000])

    def endpoint(self, request: JudgeRequest) -> str:
        """Requests with the same endpoint may share a batch: the path of the single call's URL."""
        return self.built(request).path

    def submit(self, entries: list[tuple[str, JudgeRequest]]) -> tuple[str, str]:
        """(batch id, input file id or "") for the requests, each under its custom_id."""
        raise NotImplementedError

    def state(self, batch_id: str) -> BatchState:
        raise NotImplementedError

    def results(self, batch_id: str) -> Iterator[BatchOutcome]:
        raise NotImplementedError


def _api_v1(base_url: str) -> str:
    return base_url if base_url.endswith("/v1") else base_url + "/v1"


class OpenAIBatchAPI(BatchAPI):
    name = "openai"

    def submit(self, entries: list[tuple[str, JudgeRequest]]) -> tuple[str, str]:
        lines, endpoints = [], set()
        for custom_id, request in entries:
            http = self.built(request)
            endpoints.add(http.path)
            lines.append(json.dumps({"custom_id": custom_id, "method": "POST", "url": http.path, "body": http.json}))
        if len(endpoints) != 1:
            raise ValueError(f"one OpenAI batch serves one endpoint, not {sorted(endpoints)}")
        root = _api_v1(self.base_url)
        with self._client() as client:
            up = self._check(client.post(root + "/files", data={"purpose": "batch"},
                                         files={"file": ("requests.jsonl", "\n".join(lines).encode(),
                                                         "application/jsonl")}), "file upload").json()
            batch = self._check(client.post(root + "/batches", json={
                "input_file_id": up["id"], "endpoint": endpoints.pop(), "completion_window": "24h"}),
                "batch creation").json()
        return batch["id"], up["id"]

    def _batch(self, batch_id: str) -> dict[str, Any]:
        with self._client() as client:
            return self._check(client.get(f"{_api_v1(self.base_url)}/batches/{batch_id}"), "batch status").json()

    def state(self, batch_id: str) -> BatchState:
        b = self._batch(batch_id)
        errors = "; ".join(f"line {e.get('line')}: {e.get('code')}: {e.get('message')}"
                           for e in ((b.get("errors") or {}).get("data") or []))
        return BatchState(status=b["status"], ended=b["status"] in OPENAI_ENDED, failed=b["status"] == "failed",
                          counts=dict(b.get("request_counts") or {}), error=errors)

    def results(self, batch_id: str) -> Iterator[BatchOutcome]:
        b = self._batch(batch_id)
        with self._client() as client:
            for file_id in (b.get("output_file_id"), b.get("error_file_id")):
                if not file_id:
                    continue
                text = self._check(client.get(f"{_api_v1(self.base_url)}/files/{file_id}/content"),
                                   "results download").text
                for line in text.splitlines():
                    if line.strip():
                        yield self._outcome(json.loads(line))

    def _outcome(self, row: dict[str, Any]) -> BatchOutcome:
        custom_id = row["custom_id"]
        resp, err = row.get("response") or {}, row.get("error")
        if resp.get("status_code") == 200:
            try:
                return BatchOutcome(custom_id, response=self.answer(resp["body"]))
            except BackendError as exc:
                return BatchOutcome(custom_id, error=f"{type(exc).__name__}: {exc}", retry=True)
        if err:  # e.g. batch_expired: the window ended before this request ran
            return BatchOutcome(custom_id, error=f"{err.get('code')}: {err.get('message')}", retry=True)
        status = int(resp.get("status_code") or 0)
        message = json.dumps((resp.get("body") or {}).get("error") or resp.get("body"))[:1000]
        return BatchOutcome(custom_id, error=f"HTTP {status}: {message}", retry=status in RETRYABLE_STATUS)


class AnthropicBatchAPI(BatchAPI):
    name = "anthropic"

    def _root(self) -> str:
        return _api_v1(self.base_url) + "/messages/batches"

    def submit(self, entries: list[tuple[str, JudgeRequest]]) -> tuple[str, str]:
        payload = {"requests": [{"custom_id": cid, "params": self.built(r).json} for cid, r in entries]}
        with self._client() as client:
            batch = self._check(client.post(self._root(), json=payload), "batch creation").json()
        return batch["id"], ""

    def _batch(self, batch_id: str) -> dict[str, Any]:
        with self._client() as client:
            return self._check(client.get(f"{self._root()}/{batch_id}"), "batch status").json()

    def state(self, batch_id: str) -> BatchState:
        b = self._batch(batch_id)
        return BatchState(status=b["processing_status"], ended=b["processing_status"] == "ended",
                          counts=dict(b.get("request_counts") or {}))

    def results(self, batch_id: str) -> Iterator[BatchOutcome]:
        url = self._batch(batch_id).get("results_url")
        if not url:
            raise RetryableBackendError(f"batch {batch_id} has no results_url yet")
        with self._client() as client:
            text = self._check(client.get(url), "results download").text
        for line in text.splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            result = row["result"]
            kind = result["type"]
            if kind == "succeeded":
                try:
                    yield BatchOutcome(row["custom_id"], response=self.answer(result["message"]))
                except BackendError as exc:
                    yield BatchOutcome(row["custom_id"], error=f"{type(exc).__name__}: {exc}", retry=True)
            elif kind == "errored":
                err = (result.get("error") or {}).get("error") or {}
                yield BatchOutcome(row["custom_id"], error=f"{err.get('type')}: {err.get('message')}",
                                   retry=err.get("type") in ANTHROPIC_RETRYABLE)
            else:  # canceled, expired: never ran
                yield BatchOutcome(row["custom_id"], error=f"{kind}: the request was not processed", retry=True)


APIS = {"openai": OpenAIBatchAPI, "anthropic": AnthropicBatchAPI}


def batch_api_name(config: dict[str, Any]) -> str:
    """method_options.batch_api, else the judge's provider: anthropic's, else OpenAI's."""
    mo = config.get("method_options") or {}
    return mo.get("batch_api") or ("anthropic" if config.get("provider") == "anthropic" else "openai")


def batch_api(config: dict[str, Any]) -> BatchAPI:
    return APIS[batch_api_name(config)](config)
