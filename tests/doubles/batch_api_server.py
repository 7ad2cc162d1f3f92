"""Loopback servers that follow OpenAI's Batch API and Anthropic's Message Batches, for the tests.
They refuse what the providers' documentation refuses (see judges/batch_apis.py for the sources)
and walk a batch through the documented states on a clock:

    with running_batch_server("openai", process_s=0.5, expire_after=3) as server:
        server.base_url          # http://127.0.0.1:PORT/v1
        server.state()           # batches, files, requests answered, refusals

OpenAI: validating -> in_progress -> finalizing -> completed (or expired: the requests after the
first `expire_after` go to the error file with code batch_expired; or failed, when the input
file does not validate). Anthropic: in_progress -> ended, each result succeeded, errored,
canceled or expired. `error_every` k: every k-th request a batch holds fails on its first
attempt (a 500 / an api_error: retryable), so a run must send it again in a later batch.
Answers are judges.fakeserver's (deterministic, in the format the prompt asks for); usage
counts words, as that server does.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from judges.fakeserver import answer_for

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses")
ANTHROPIC_PARAMS = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences",
                    "metadata", "tools", "tool_choice", "thinking", "service_tier"}


@dataclass
class Behaviour:
    process_s: float = 0.3  # how long a batch takes from creation to its end
    expire_after: int | None = None  # the first batch expires after answering this many requests
    error_every: int = 0  # every k-th request fails (retryably) on its first attempt
    fail_validation: bool = False  # OpenAI: the first batch fails validation whole
    api_key: str = "sk-loopback"


@dataclass
class State:
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)  # custom_id -> times it was in a batch
    answered: dict[str, int] = field(default_factory=dict)  # custom_id -> times it was answered
    refusals: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    batches_made: int = 0


def _answer(messages: list[dict[str, Any]], system: str = "") -> tuple[str, int, int]:
    prompt = "\n\n".join(([system] if system else []) + [str(m.get("content", "")) for m in messages])
    text = answer_for(prompt)[0]
    return text, len(prompt.split()), len(text.split())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, ctype: str = "application/json") -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        with self.server.lock:
            self.server.state.refusals.append(f"{self.command} {self.path}: {message}")
        if self.server.api == "anthropic":
            return self._send(status, {"type": "error", "error": {"type": kind, "message": message}})
        self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _authorised(self) -> bool:
        key = self.server.behaviour.api_key
        if self.server.api == "anthropic":
            if self.headers.get("anthropic-version") != "2023-06-01":
                self._refuse(400, "anthropic-version: header is required")
                return False
            if self.headers.get("x-api-key") != key:
                self._refuse(401, "invalid x-api-key", "authentication_error")
                return False
            return True
        if self.headers.get("Authorization") != f"Bearer {key}":
            self._refuse(401, "Incorrect API key provided", "invalid_api_key")
            return False
        return True

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        raw = self._body()
        if not self._authorised():
            return
        with self.server.lock:
            if self.server.api == "openai" and self.path == "/v1/files":
                return self._openai_upload(raw)
            if self.server.api == "openai" and self.path == "/v1/batches":
                return self._openai_create(raw)
            if self.server.api == "anthropic" and self.path == "/v1/messages/batches":
                return self._anthropic_create(raw)
        self._refuse(404, f"no route {self.path}")

    def do_GET(self) -> None:
        if not self._authorised():
            return
        with self.server.lock:
            self.server.advance()
            parts = self.path.strip("/").split("/")
            st = self.server.state
            if parts == ["v1", "models"]:  # both list models (a run's preflight asks, with the key)
                return self._send(200, {"data": [{"id": "batch-double", "object": "model"}], "object": "list"})
            if self.server.api == "openai":
                if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in st.batches:
                    return self._send(200, self.server.public(st.batches[parts[2]]))
                if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content" and parts[2] in st.files:
                    return self._send(200, st.files[parts[2]]["content"], "application/jsonl")
            else:
                if parts[:3] == ["v1", "messages", "batches"] and len(parts) >= 4 and parts[3] in st.batches:
                    b = st.batches[parts[3]]
                    if len(parts) == 4:
                        return self._send(200, self.server.public(b))
                    if len(parts) == 5 and parts[4] == "results":
                        if b["processing_status"] != "ended":
                            return self._refuse(400, "results are available once processing_status is ended")
                        return self._send(200, b["_results"], "application/binary")
        self._refuse(404, f"no such resource {self.path}")

    # ----------------------------------------------------------------- OpenAI
    def _openai_upload(self, raw: bytes) -> None:
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("multipart/form-data"):
            return self._refuse(400, "file upload must be multipart/form-data")
        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
        fields = {part.get_param("name", header="content-disposition"): part for part in msg.iter_parts()}
        if "file" not in fields:
            return self._refuse(400, "'file' is a required property")
        purpose = fields.get("purpose")
        if purpose is None or purpose.get_content().strip() != "batch":
            return self._refuse(400, "purpose must be 'batch' for a batch input file")
        content = fields["file"].get_payload(decode=True)
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        self.server.state.files[file_id] = {"id": file_id, "object": "file", "bytes": len(content),
                                            "created_at": int(time.time()), "filename": fields["file"].get_filename(),
                                            "purpose": "batch", "content": content}
        self._send(200, {k: v for k, v in self.server.state.files[file_id].items() if k != "content"})

    def _openai_create(self, raw: bytes) -> None:
        try:
            req = json.loads(raw)
        except ValueError:
            return self._refuse(400, "body is not JSON")
        file = self.server.state.files.get(req.get("input_file_id"))
        if file is None:
            return self._refuse(400, f"No such File object: {req.get('input_file_id')}")
        if req.get("endpoint") not in OPENAI_ENDPOINTS:
            return self._refuse(400, f"endpoint must be one of {', '.join(OPENAI_ENDPOINTS)}")
        if req.get("completion_window") != "24h":
            return self._refuse(400, "completion_window: only '24h' is supported")
        st, b = self.server.state, self.server.behaviour
        st.batches_made += 1
        errors, lines, ids = [], [], set()
        for n, line in enumerate(file["content"].decode().splitlines(), 1):
            try:
                row = json.loads(line)
            except ValueError:
                errors.append({"code": "invalid_json_line", "line": n, "message": "not JSON"})
                continue
            cid = row.get("custom_id")
            if not isinstance(cid, str) or cid in ids:
                errors.append({"code": "duplicate_custom_id", "line": n, "message": "custom_id must be unique"})
            if row.get("method") != "POST" or row.get("url") != req["endpoint"]:
                errors.append({"code": "mismatched_endpoint", "line": n,
                               "message": "every line's url must be the batch's endpoint, method POST"})
            body = row.get("body") or {}
            if "model" not in body or ("messages" not in body and "prompt" not in body):
                errors.append({"code": "invalid_request", "line": n, "message": "body needs model and messages"})
            ids.add(cid)
            lines.append(row)
        if b.fail_validation and st.batches_made == 1:
            errors.append({"code": "invalid_request", "line": 1, "message": "scripted validation failure"})
        batch_id = f"batch_{uuid.uuid4().hex[:24]}"
        now = time.time()
        st.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": req["endpoint"], "errors": None,
            "input_file_id": file["id"], "completion_window": "24h", "status": "validating",
            "output_file_id": None, "error_file_id": None, "created_at": int(now), "in_progress_at": None,
            "expires_at": int(now) + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
            "expired_at": None, "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "metadata": None,
            "_lines": lines, "_errors": errors, "_t0": now, "_n": st.batches_made}
        self._send(200, self.server.public(st.batches[batch_id]))

    # ----------------------------------------------------------------- Anthropic
    def _anthropic_create(self, raw: bytes) -> None:
        try:
            req = json.loads(raw)
        except ValueError:
            return self._refuse(400, "body is not JSON")
        requests = req.get("requests")
        if not isinstance(requests, list) or not requests:
            return self._refuse(400, "requests: a non-empty list is required")
        ids = set()
        for i, r in enumerate(requests):
            cid, params = r.get("custom_id"), r.get("params") or {}
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                return self._refuse(400, f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$")
            if cid in ids:
                return self._refuse(400, f"requests.{i}.custom_id: duplicate custom_id {cid}")
            ids.add(cid)
            if unknown := sorted(set(params) - ANTHROPIC_PARAMS):
                return self._refuse(400, f"requests.{i}.params.{unknown[0]}: Extra inputs are not permitted")
            if not isinstance(params.get("max_tokens"), int):
                return self._refuse(400, f"requests.{i}.params.max_tokens: Field required")
            if not params.get("model"):
                return self._refuse(400, f"requests.{i}.params.model: Field required")
            for m in params.get("messages") or []:
                if m.get("role") not in ("user", "assistant"):
                    return self._refuse(400, f"requests.{i}.params.messages: Unexpected role \"{m.get('role')}\". "
                                             "Use a top-level `system` parameter for a system prompt")
            if not (0 <= float(params.get("temperature", 1.0)) <= 1):
                return self._refuse(400, f"requests.{i}.params.temperature: must be between 0 and 1")
        st = self.server.state
        st.batches_made += 1
        batch_id = f"msgbatch_{uuid.uuid4().hex[:24]}"
        now = time.time()
        st.batches[batch_id] = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": None, "created_at": _iso(now), "expires_at": _iso(now + 86400), "archived_at": None,
            "cancel_initiated_at": None, "results_url": None, "_requests": requests, "_t0": now,
            "_n": st.batches_made}
        self._send(200, self.server.public(st.batches[batch_id]))


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, api: str, behaviour: Behaviour) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api
        self.behaviour = behaviour
        self.state = State()
        self.lock = threading.Lock()

    @staticmethod
    def public(b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    def _failing(self, cid: str) -> bool:
        """The request fails on its first attempt when it is every error_every-th seen."""
        st, k = self.state, self.behaviour.error_every
        st.seen[cid] = st.seen.get(cid, 0) + 1
        return bool(k) and st.seen[cid] == 1 and len(st.seen) % k == 0

    def advance(self) -> None:
        """Move every batch along the documented states by the clock."""
        now = time.time()
        for b in self.state.batches.values():
            age = now - b["_t0"]
            if self.api == "openai":
                self._advance_openai(b, age, now)
            elif b["processing_status"] == "in_progress" and age >= self.behaviour.process_s:
                self._end_anthropic(b, now)

    def _advance_openai(self, b: dict[str, Any], age: float, now: float) -> None:
        if b["status"] == "validating" and age >= self.behaviour.process_s / 3:
            if b["_errors"]:
                b.update(status="failed", failed_at=int(now), errors={"object": "list", "data": b["_errors"]})
                return
            b.update(status="in_progress", in_progress_at=int(now))
        if b["status"] == "in_progress" and age >= self.behaviour.process_s * 2 / 3:
            b.update(status="finalizing", finalizing_at=int(now))
        if b["status"] == "finalizing" and age >= self.behaviour.process_s:
            self._end_openai(b, now)

    def _end_openai(self, b: dict[str, Any], now: float) -> None:
        expire = self.behaviour.expire_after if b["_n"] == 1 else None
        out, err = [], []
        for i, row in enumerate(b["_lines"]):
            cid = row["custom_id"]
            rid = f"batch_req_{uuid.uuid4().hex[:20]}"
            if expire is not None and i >= expire:
                self.state.seen[cid] = self.state.seen.get(cid, 0) + 1
                err.append({"id": rid, "custom_id": cid, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})
                continue
            if self._failing(cid):
                err.append({"id": rid, "custom_id": cid, "error": None, "response": {
                    "status_code": 500, "request_id": rid,
                    "body": {"error": {"message": "The server had an error", "type": "server_error"}}}})
                continue
            body = row["body"]
            text, p_tok, c_tok = _answer(body.get("messages") or [{"content": body.get("prompt", "")}])
            self.state.prompt_tokens += p_tok
            self.state.completion_tokens += c_tok
            self.state.answered[cid] = self.state.answered.get(cid, 0) + 1
            choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                      if "messages" in body else {"index": 0, "text": text, "finish_reason": "stop"})
            out.append({"id": rid, "custom_id": cid, "error": None, "response": {
                "status_code": 200, "request_id": rid, "body": {
                    "id": f"chatcmpl-{rid}", "object": "chat.completion", "model": body["model"], "choices": [choice],
                    "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok}}}})
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                fid = f"file-{uuid.uuid4().hex[:24]}"
                self.state.files[fid] = {"id": fid, "purpose": "batch_output",
                                         "content": ("\n".join(json.dumps(r) for r in rows) + "\n").encode()}
                b[name] = fid
        b["request_counts"] = {"total": len(b["_lines"]), "completed": len(out), "failed": len(err)}
        if expire is not None:
            b.update(status="expired", expired_at=int(now))
        else:
            b.update(status="completed", completed_at=int(now))

    def _end_anthropic(self, b: dict[str, Any], now: float) -> None:
        expire = self.behaviour.expire_after if b["_n"] == 1 else None
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines = []
        for i, r in enumerate(b["_requests"]):
            cid, params = r["custom_id"], r["params"]
            if expire is not None and i >= expire:
                self.state.seen[cid] = self.state.seen.get(cid, 0) + 1
                result: dict[str, Any] = {"type": "expired"}
            elif self._failing(cid):
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "Internal server error"}}}
            else:
                text, p_tok, c_tok = _answer(params["messages"], params.get("system") or "")
                self.state.prompt_tokens += p_tok
                self.state.completion_tokens += c_tok
                self.state.answered[cid] = self.state.answered.get(cid, 0) + 1
                result = {"type": "succeeded", "message": {
                    "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                    "model": params["model"], "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": p_tok, "output_tokens": c_tok}}}
            counts[result["type"]] += 1
            lines.append(json.dumps({"custom_id": cid, "result": result}))
        b.update(processing_status="ended", ended_at=_iso(now), request_counts=counts,
                 results_url=f"http://127.0.0.1:{self.server_address[1]}/v1/messages/batches/{b['id']}/results",
                 _results=("\n".join(lines) + "\n").encode())


@dataclass
class BatchServerHandle:
    base_url: str
    api_key: str
    _server: _Server

    def state(self) -> State:
        with self._server.lock:
            return self._server.state


@contextlib.contextmanager
def running_batch_server(api: str, **behaviour: Any) -> Iterator[BatchServerHandle]:
    """A loopback batch server for `api` ("openai" or "anthropic") on a free port, in a thread."""
    server = _Server(api, Behaviour(**behaviour))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield BatchServerHandle(f"http://127.0.0.1:{server.server_address[1]}/v1", server.behaviour.api_key, server)
    finally:
        server.shutdown()
        server.server_close()
