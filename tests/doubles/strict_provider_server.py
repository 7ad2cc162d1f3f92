"""Strict loopback servers: one per provider profile, refusing what that provider documents it refuses.

    with running_strict_server("anthropic") as server:
        server.base_url        # http://127.0.0.1:PORT/v1 (google: .../v1beta/openai)
        server.requests        # every request seen: (path, headers, body)
        server.refusals        # (status, message) of every refused one

Each answers in its provider's own shape (Chat Completions, or Anthropic's Messages API with
content blocks and input/output token usage). Answers are deterministic from the prompt: in the
prompt's own format (judges.fakeserver.answer_for), or, when the request carries a JSON schema the
provider honours, an instance of that schema, as a grammar would force. The output cap is honoured:
an answer longer than the cap is cut with finish_reason "length" (Anthropic: stop_reason
"max_tokens"), and the OpenAI reasoning models spend `hidden_reasoning` tokens from the cap first,
so a cap sized for the visible answer comes back empty, as the real ones do.

The rules and their sources are listed in docs/judges.md; CLI: python -m tests.doubles.strict_provider_server PROFILE --port N.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from judges.fakeserver import answer_for, score_range, text_hash, top_logprobs_for

PROFILES = ("openai", "anthropic", "google", "vllm", "sglang", "llamacpp", "ollama", "tgi", "openai-compatible")
REASONING_RE = re.compile(r"^(o\d+|gpt-5)(?!.*-chat)")
OPENAI_EFFORTS = {"none", "minimal", "low", "medium", "high"}
ANTHROPIC_FIELDS = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences",
                    "stream", "metadata", "thinking", "tools", "tool_choice", "service_tier"}


class Refused(Exception):
    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


@dataclass
class Server:
    profile: str
    hidden_reasoning: int = 600  # tokens an OpenAI reasoning model spends before its visible answer
    requests: list[tuple[str, dict[str, str], dict]] = field(default_factory=list)
    refusals: list[tuple[int, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


# ----------------------------------------------------------------------------------- answers

def instance(schema: dict, h: int, depth: int = 0) -> Any:
    """A deterministic instance of one of Concord's answer schemas (what a grammar lets a model say)."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][h % len(schema["enum"])]
    if kind == "integer":
        lo, hi = schema.get("minimum", 0), schema.get("maximum", 9)
        return lo + h % (hi - lo + 1)
    if kind == "string":
        return f"The answer follows the rubric (ref {h % 9973})."
    if kind == "array":
        items = schema.get("items") or {}
        n = schema.get("minItems", 1)
        lo, hi = items.get("minimum", 1), items.get("maximum", n)
        pool = sorted(range(lo, hi + 1), key=lambda v: text_hash(f"{h}/{v}"))
        return pool[:n]
    if kind == "object":
        out = {k: instance(v, text_hash(f"{h}/{k}"), depth + 1) for k, v in (schema.get("properties") or {}).items()}
        if "best" in out and "worst" in out and out["best"] == out["worst"]:
            hi = schema["properties"]["worst"].get("maximum", 2)
            out["worst"] = out["best"] % hi + 1
        return out
    raise ValueError(f"no instance for schema type {kind!r}")


def prompt_of(messages: list[dict]) -> str:
    parts = []
    for m in messages:
        c = m.get("content")
        parts.append(c if isinstance(c, str) else "".join(b.get("text", "") for b in c or []))
    return "\n\n".join(parts)


def words(text: str) -> int:
    return max(1, len(text.split()))


def capped(text: str, cap: int) -> tuple[str, int, bool]:
    """(visible text, output tokens, cut) for an answer under a cap of `cap` tokens (words here)."""
    toks = text.split(" ")
    if len(text.split()) <= cap:
        return text, words(text), False
    return " ".join(toks[:cap]), cap, True


# ----------------------------------------------------------------------------------- rules

def _require(cond: bool, message: str, param: str | None = None, status: int = 400) -> None:
    if not cond:
        raise Refused(status, message, param)


def schema_of(profile: str, body: dict) -> dict | None:
    """The JSON schema the request holds its answer to, read as this provider documents it; a
    shape it does not document is refused."""
    rf = body.get("response_format")
    if profile == "vllm":
        _require("guided_json" not in body, "guided_json was removed in vLLM 0.12; use structured_outputs.json",
                 "guided_json")
        if body.get("structured_outputs"):
            return body["structured_outputs"].get("json")
    if rf is None:
        return None
    kind = rf.get("type")
    if profile == "tgi":
        _require(kind in ("json", "json_object", "regex", "json_schema") and ("value" in rf or "json_schema" in rf),
                 "response_format must be {type: json_object, value: <schema>}", "response_format", 422)
        return rf.get("value") or rf["json_schema"].get("schema")
    if profile == "llamacpp" and kind == "json_object":
        return rf.get("schema")
    _require(kind == "json_schema" and isinstance(rf.get("json_schema"), dict) and "schema" in rf["json_schema"],
             f"response_format type {kind!r} needs json_schema: {{name, schema}}", "response_format")
    js = rf["json_schema"]
    if profile == "openai":
        _require(bool(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", js.get("name") or "")), "json_schema.name is required",
                 "response_format.json_schema.name")
        if js.get("strict"):
            check_strict(js["schema"])
    return js["schema"]


def check_strict(schema: dict, where: str = "schema") -> None:
    """OpenAI strict mode: every object lists all its properties as required, additionalProperties false."""
    if schema.get("type") == "object":
        props = schema.get("properties") or {}
        _require(schema.get("additionalProperties") is False,
                 f"Invalid schema: In context={where}, 'additionalProperties' is required to be supplied and to be false",
                 "response_format")
        _require(set(schema.get("required") or []) == set(props),
                 f"Invalid schema: In context={where}, 'required' is required to include every key in properties",
                 "response_format")
        for k, v in props.items():
            check_strict(v, f"{where}.{k}")


def check_openai_style(profile: str, body: dict, headers: dict[str, str]) -> None:
    _require(isinstance(body.get("model"), str) and body["model"], "you must provide a model parameter", "model")
    _require(isinstance(body.get("messages"), list) and body["messages"], "messages is required", "messages")
    model = body["model"]
    if profile == "openai":
        _require(headers.get("authorization", "").startswith("Bearer sk-"), "Incorrect API key provided", None, 401)
        reasoning = bool(REASONING_RE.match(model))
        if reasoning:
            _require("max_tokens" not in body, "Unsupported parameter: 'max_tokens' is not supported with this "
                                               "model. Use 'max_completion_tokens' instead.", "max_tokens")
            for key in ("temperature", "top_p"):
                _require(body.get(key, 1) == 1, f"Unsupported value: '{key}' does not support {body.get(key)} with "
                                                f"this model. Only the default (1) value is supported.", key)
            _require(not body.get("logprobs"), "logprobs are not supported with reasoning models", "logprobs")
            _require(body.get("reasoning_effort", "medium") in OPENAI_EFFORTS, "invalid reasoning_effort",
                     "reasoning_effort")
        else:
            _require("reasoning_effort" not in body, "Unrecognized request argument: reasoning_effort "
                                                     "(not a reasoning model)", "reasoning_effort")
    if profile == "google":
        _require(headers.get("authorization", "").startswith("Bearer "), "API key not valid", None, 401)
        _require(not body.get("logprobs"), "logprobs is not supported on this endpoint", "logprobs")
    if profile == "tgi":
        _require(body.get("top_logprobs", 0) <= 5, "top_n_tokens must be <= 5", "top_logprobs", 422)
    if body.get("top_logprobs"):
        _require(bool(body.get("logprobs")), "top_logprobs requires logprobs: true", "top_logprobs")


def check_anthropic_tools(messages: list[dict], body: dict) -> None:
    """Anthropic's tool-use rules (its 400 messages): every tool_use answered by a tool_result in the
    very next user turn, no tool_result without a tool_use just before, ids of [a-zA-Z0-9_-], tools defined."""
    blocks_of = [[b for b in m.get("content") if isinstance(b, dict)] if isinstance(m.get("content"), list) else []
                 for m in messages]
    any_tool = False
    for n, blocks in enumerate(blocks_of):
        uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        any_tool = any_tool or bool(uses or results)
        for u in uses:
            _require(bool(re.fullmatch(r"[a-zA-Z0-9_-]+", u)), f"messages.{n}.content: tool_use.id: String should "
                                                              f"match pattern '^[a-zA-Z0-9_-]+$'", "messages")
        if uses:
            after = blocks_of[n + 1] if n + 1 < len(blocks_of) else []
            answered = {b.get("tool_use_id") for b in after if b.get("type") == "tool_result"}
            missing = [u for u in uses if u not in answered]
            _require(not missing, f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                                  f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                                  f"`tool_result` block in the next message.", "messages")
        if results:
            before = {b["id"] for b in (blocks_of[n - 1] if n else []) if b.get("type") == "tool_use"}
            stray = [r for r in results if r not in before]
            _require(not stray, f"messages.{n}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                                f"{', '.join(map(str, stray))}. Each `tool_result` block must have a corresponding "
                                f"`tool_use` block in the previous message.", "messages")
    _require(not messages or messages[0].get("role") == "user", "messages: first message must use the \"user\" role",
             "messages")
    for n in range(1, len(messages)):
        _require(messages[n].get("role") != messages[n - 1].get("role"),
                 f"messages.{n}: roles must alternate between \"user\" and \"assistant\"", "messages")
    _require(not any_tool or bool(body.get("tools")), "Requests which include `tool_use` or `tool_result` blocks "
                                                      "must define tools.", "tools")


def check_anthropic(body: dict, headers: dict[str, str]) -> None:
    _require(bool(headers.get("x-api-key")), "x-api-key header is required", None, 401)
    _require(bool(headers.get("anthropic-version")), "anthropic-version: header is required")
    extra = sorted(set(body) - ANTHROPIC_FIELDS)
    _require(not extra, f"{extra[0] if extra else ''}: Extra inputs are not permitted", extra[0] if extra else None)
    _require(isinstance(body.get("max_tokens"), int), "max_tokens: Field required", "max_tokens")
    for m in body.get("messages") or []:
        _require(m.get("role") in ("user", "assistant"), f'messages: Unexpected role "{m.get("role")}". The Messages '
                                                         f'API accepts a top-level `system` parameter, not "system" '
                                                         f'as an input message role.', "messages")
    check_anthropic_tools(body.get("messages") or [], body)
    _require(0 <= body.get("temperature", 0) <= 1, "temperature: must be between 0 and 1", "temperature")
    _require(not ("temperature" in body and "top_p" in body), "`temperature` and `top_p` cannot both be specified "
                                                              "for this model", "top_p")
    thinking = body.get("thinking")
    if thinking and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens", 0)
        _require(budget >= 1024, "thinking.budget_tokens: must be greater than or equal to 1024", "thinking")
        _require(budget < body["max_tokens"], "max_tokens must be greater than thinking.budget_tokens", "max_tokens")
        _require("temperature" not in body or body["temperature"] == 1, "temperature may only be set to 1 when "
                                                                       "thinking is enabled", "temperature")
        _require((body.get("tool_choice") or {}).get("type") not in ("tool", "any"),
                 "Thinking may not be enabled when tool_choice forces tool use.", "tool_choice")
    if body.get("tool_choice", {}).get("type") == "tool":
        names = {t.get("name") for t in body.get("tools") or []}
        _require(body["tool_choice"].get("name") in names, "tool_choice names a tool that is not in tools", "tool_choice")


# ----------------------------------------------------------------------------------- handler

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_HTTPServer"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _refuse(self, exc: Refused) -> None:
        s = self.server.state
        with s.lock:
            s.refusals.append((exc.status, exc.message))
        if s.profile == "anthropic":
            kind = "authentication_error" if exc.status == 401 else "invalid_request_error"
            self._send(exc.status, {"type": "error", "error": {"type": kind, "message": exc.message}})
        else:
            self._send(exc.status, {"error": {"message": exc.message, "type": "invalid_request_error",
                                              "param": exc.param, "code": None}})

    def do_POST(self) -> None:
        s = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw)
        except ValueError:
            return self._refuse(Refused(400, "We could not parse the JSON body of your request."))
        with s.lock:
            s.requests.append((self.path, headers, body))
        try:
            expected = {"anthropic": "/v1/messages", "google": "/v1beta/openai/chat/completions"}.get(
                s.profile, "/v1/chat/completions")
            if self.path != expected and not (self.path == "/v1/completions" and s.profile not in
                                              ("openai", "anthropic", "google")):
                raise Refused(404, f"no route {self.path} on the {s.profile} server")
            if s.profile == "anthropic":
                check_anthropic(body, headers)
                return self._send(200, self._anthropic(body))
            if "messages" in body:
                check_openai_style(s.profile, body, headers)
            return self._send(200, self._openai(body))
        except Refused as exc:
            self._refuse(exc)

    def _openai(self, body: dict) -> dict:
        s = self.server.state
        chat = "messages" in body
        prompt = prompt_of(body["messages"]) if chat else body.get("prompt", "")
        schema = schema_of(s.profile, body) if chat else None
        h = text_hash(prompt)
        text = json.dumps(instance(schema, h)) if schema else answer_for(prompt)[0]
        cap = body.get("max_completion_tokens", body.get("max_tokens", 1 << 30))
        hidden = s.hidden_reasoning if s.profile == "openai" and REASONING_RE.match(body["model"]) else 0
        want_lp = bool(body.get("logprobs"))
        if want_lp and cap == 1:  # G-Eval: one score token with its alternatives
            lo, hi = score_range(prompt)
            top = top_logprobs_for(prompt, lo, hi, int(body.get("top_logprobs") or body.get("logprobs") or 5))
            tok = next(iter(top))
            text, out_toks, cut = tok, 1, False
            lp = {"content": [{"token": tok, "logprob": top[tok],
                               "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()]}]}
        else:
            text, out_toks, cut = capped(text, max(cap - hidden, 0)) if cap > hidden else ("", 0, True)
            lp = None
        usage = {"prompt_tokens": words(prompt), "completion_tokens": out_toks + min(hidden, cap),
                 "total_tokens": words(prompt) + out_toks + min(hidden, cap)}
        if hidden:
            usage["completion_tokens_details"] = {"reasoning_tokens": min(hidden, cap)}
        finish = "length" if cut else "stop"
        if chat:
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": finish}
            if lp:
                choice["logprobs"] = lp
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish}
        n = body.get("n", 1)
        return {"id": f"chatcmpl-{h % 10**8}", "object": "chat.completion" if chat else "text_completion",
                "model": body["model"], "choices": [{**choice, "index": i} for i in range(n)], "usage": usage}

    def _anthropic(self, body: dict) -> dict:
        prompt = (body.get("system") or "") + "\n\n" + prompt_of(body["messages"])
        h = text_hash(prompt)
        thinking = (body.get("thinking") or {}).get("budget_tokens", 0)
        cap = body["max_tokens"] - thinking
        tool = (body.get("tool_choice") or {}).get("name")
        usage = {"input_tokens": words(prompt)}
        if tool:
            schema = next(t["input_schema"] for t in body["tools"] if t["name"] == tool)
            args = instance(schema, h)
            out = words(json.dumps(args))
            usage["output_tokens"] = min(out, cap)
            content = [{"type": "tool_use", "id": f"toolu_{h % 10**8}", "name": tool, "input": args}]
            stop = "tool_use" if out <= cap else "max_tokens"
        else:
            text, out, cut = capped(answer_for(prompt)[0], cap)
            usage["output_tokens"] = out
            content = [{"type": "text", "text": text}]
            stop = "max_tokens" if cut else "end_turn"
        return {"id": f"msg_{h % 10**8}", "type": "message", "role": "assistant", "model": body["model"],
                "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], state: Server):
        super().__init__(addr, _Handler)
        self.state = state


@dataclass
class StrictServerHandle:
    base_url: str
    state: Server

    @property
    def requests(self) -> list[tuple[str, dict[str, str], dict]]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def refusals(self) -> list[tuple[int, str]]:
        with self.state.lock:
            return list(self.state.refusals)


@contextlib.contextmanager
def running_strict_server(profile: str, port: int = 0, **options: Any) -> Iterator[StrictServerHandle]:
    """A strict `profile` server on 127.0.0.1 (a free port by default), in a thread, stopped on exit."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {', '.join(PROFILES)}")
    state = Server(profile, **options)
    server = _HTTPServer(("127.0.0.1", port), state)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield StrictServerHandle(root + ("/v1beta/openai" if profile == "google" else "/v1"), state)
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile", choices=PROFILES)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    with running_strict_server(args.profile, args.port) as handle:
        print(f"{args.profile} strict server at {handle.base_url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
