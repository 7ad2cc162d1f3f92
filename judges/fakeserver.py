"""A real OpenAI-compatible HTTP server on 127.0.0.1 with scripted misbehaviour, for tests and benches.

    with running_fake_server(latency_s=0.02, fail_429_first=2) as server:
        server.base_url      # http://127.0.0.1:PORT/v1
        server.stats()       # requests, max_in_flight, statuses, ...

CLI: python -m judges.fakeserver --port 8011 [--latency-ms 20]. GET /_stats returns the counters.

Answers are deterministic from a hash of the prompt and follow the output format the
prompt asks for (first-line score, JSON score, per-criterion block, TP/FP labels, A/B, a ranking
`[[2 > 1 > 3]]` or a best-worst pick `[[best: 3, worst: 1]]` of the "## Response N" shown).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator


@dataclass
class Behaviour:
    latency_s: float = 0.0  # fixed delay per request (the "model server" cost)
    fail_429_first: int = 0  # first N completion requests get 429 + Retry-After
    retry_after: str = "0"
    fail_500_first: int = 0
    slow_first: int = 0  # first N requests sleep slow_s (to trip client timeouts)
    slow_s: float = 5.0
    always_status: int | None = None  # e.g. 400: every completion request fails with it
    malformed: bool = False  # 200 with a body that is not JSON
    truncate: bool = False  # finish_reason "length", text cut mid-sentence
    garbage: bool = False  # text without any verdict
    logprobs_supported: bool = True
    model: str = "fake-judge"
    api_key: str | None = None  # when set, a request without `Authorization: Bearer <api_key>` gets 401
    fixed_text: str | None = None  # answer exactly this (for parser tests through HTTP)
    # (prompt, model) -> the answer, or None for the default one: lets a simulation answer per prompt
    # (judges/simulation.py answers from the latent truth, in the prompt's own output format).
    responder: Callable[[str, str], str | None] | None = None


@dataclass
class Stats:
    requests: int = 0
    completion_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    paths: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    authorization: str | None = None  # the last Authorization header seen
    # sum over completion requests of the output cap each carried (max_completion_tokens or max_tokens, else
    # this server's own 512) x n: what the requests let the provider bill, read from the wire
    output_caps: int = 0


def text_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


_RANGE_PATTERNS = [
    r"range from (-?\d+) to (-?\d+)",
    r"score between (-?\d+) and (-?\d+)",
    r"\((-?\d+)\s*[–-]\s*(-?\d+)\)",
    r"integer from (-?\d+) to (-?\d+)",
]


def score_range(prompt: str) -> tuple[int, int]:
    """The scale the prompt asks for (last mention wins), default 1..5."""
    best: tuple[int, int, int] | None = None
    for pat in _RANGE_PATTERNS:
        for m in re.finditer(pat, prompt):
            if best is None or m.start() > best[0]:
                best = (m.start(), int(m.group(1)), int(m.group(2)))
    return (best[1], best[2]) if best else (1, 5)


def shown_responses(prompt: str) -> int:
    """How many responses a comparative prompt shows ("## Response 1".."## Response K")."""
    return max((int(n) for n in re.findall(r"^## Response (\d+)\s*$", prompt, re.M)), default=0)


def _comparative_answer(prompt: str, h: int, reason: str) -> str | None:
    k = shown_responses(prompt)
    if k < 2:
        return None
    order = sorted(range(1, k + 1), key=lambda n: text_hash(f"{h}/{n}"))  # a deterministic permutation, best first
    if "[[2 > 1 > 3]]" in prompt:
        return f"{reason}\n[[{' > '.join(map(str, order))}]]"
    if "[[best: 3, worst: 1]]" in prompt:
        return f"{reason}\n[[best: {order[0]}, worst: {order[-1]}]]"
    return None


def answer_for(prompt: str) -> tuple[str, int, int]:
    """(text, lo, hi): a deterministic judgement in the format the prompt asks for."""
    h = text_hash(prompt)
    lo, hi = score_range(prompt)
    score = lo + h % (hi - lo + 1)
    reason = f"The response is judged on the stated criteria (ref {h % 9973})."
    tail = prompt  # format cues may sit before long items and examples
    compared = _comparative_answer(prompt, h, reason)
    if compared is not None:
        return compared, lo, hi
    ints = re.findall(r'"([\w.]+)": <integer from (-?\d+) to (-?\d+)>', tail)  # a step key has dots: m2.t0
    opts = re.findall(r'"([\w.]+)": "<one of ([^>"]+)>"', tail)
    if ints or opts:  # a JSON answer schema: fill every field
        obj: dict[str, Any] = {}
        for i, (k, a, b) in enumerate(ints):
            obj[k] = int(a) + (h >> (4 * i)) % (int(b) - int(a) + 1)
        for i, (k, alts) in enumerate(opts):
            choices = alts.split("|")
            obj[k] = choices[(h >> (5 * i + 2)) % len(choices)]
        obj["reasoning" if len(obj) > 1 else "reason"] = reason
        return json.dumps(obj), lo, hi
    if '"label"' in tail and "FP1" in tail:
        labels = ["TP", "FP3", "FP2", "FP1"]
        return json.dumps({"label": labels[h % 4], "reason": reason}), lo, hi
    if '"winner"' in tail or "[[A]]" in tail:
        return f"{reason}\n[[{'AB'[h % 2]}]]", lo, hi
    if "**Overall Rating**" in prompt:
        names = re.findall(r"- \*\*([^*]+)\*\*: score", prompt)
        if names:
            lines = [f"- **{n}**: {lo + (h >> (3 * i)) % (hi - lo + 1)}" for i, n in enumerate(names)]
            reasons = [f"- **{n}**: {reason}" for n in names if n != "Overall Rating"]
            return "\n".join(lines) + "\n\n**Reasoning:**\n\n" + "\n".join(reasons), lo, hi
    if '"meaning"' in tail or '"reward"' in tail or '"source_correct"' in tail:
        return json.dumps({"meaning": h % 5, "reward": (h >> 4) % 7 - 3, "source_correct": bool(h & 1),
                           "target_correct": bool(h & 2), "reason": reason}), lo, hi
    if "JSON" in tail:
        return json.dumps({"score": str(score), "reason": reason}), lo, hi
    return f"{score}\n{reason}", lo, hi


def tool_message_problem(messages: list[dict]) -> str | None:
    """What the Chat Completions API refuses in a conversation with tool calls (its 400 messages):
    a tool message answering no tool call of the assistant message just before, and an assistant
    message with tool_calls not followed by a tool message for each of them."""
    waiting: list[str] = []
    for n, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                return (f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        f"with 'tool_calls' (messages[{n}])")
            waiting.remove(m["tool_call_id"])
            continue
        if waiting:
            return (f"An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")
        waiting = [c["id"] for c in m.get("tool_calls") or []]
    if waiting:
        return f"the tool_call_ids {', '.join(waiting)} did not have response messages"
    return None


def top_logprobs_for(prompt: str, lo: int, hi: int, k: int, centre: int | None = None) -> dict[str, float]:
    """A peaked, deterministic distribution over the score tokens of the prompt's scale, around
    `centre` when given (a scripted answer), else around a value drawn from the prompt."""
    h = text_hash(prompt)
    centre = centre if centre is not None and lo <= centre <= hi else lo + h % (hi - lo + 1)
    weights = {str(v): math.exp(-abs(v - centre) * 1.5) for v in range(lo, hi + 1)}
    weights["The"] = 0.05  # some mass off the score tokens, as real models have
    total = sum(weights.values())
    items = sorted(((t, math.log(w / total)) for t, w in weights.items()), key=lambda kv: -kv[1])
    return dict(items[:max(k, 1)])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        st = self.server.stats
        with self.server.lock:
            st.statuses[str(status)] = st.statuses.get(str(status), 0) + 1
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def _unauthorised(self) -> bool:
        want = self.server.behaviour.api_key
        if want is None or self.headers.get("Authorization") == f"Bearer {want}":
            return False
        self._send(401, b'{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}')
        return True

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.stats.requests += 1
        if self.path.rstrip("/").endswith("/_stats"):
            with self.server.lock:
                body = json.dumps(asdict(self.server.stats)).encode()
            return self._send(200, body)
        if self.path.rstrip("/").endswith("/models"):
            if self._unauthorised():
                return
            b = self.server.behaviour
            return self._send(200, json.dumps({"object": "list", "data": [
                {"id": b.model, "object": "model", "owned_by": "concord-fake"}]}).encode())
        self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        srv, b = self.server, self.server.behaviour
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.rstrip("/")
        with srv.lock:
            st = srv.stats
            st.requests += 1
            st.authorization = self.headers.get("Authorization")
            st.paths[path] = st.paths.get(path, 0) + 1
            if not (path.endswith("/chat/completions") or path.endswith("/completions")):
                n = None
            else:
                st.completion_requests += 1
                n = st.completion_requests
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            if n is None:
                return self._send(404, b'{"error": {"message": "not found"}}')
            if self._unauthorised():
                return
            self._complete(path, raw, n, b)
        finally:
            with srv.lock:
                srv.stats.in_flight -= 1

    def _complete(self, path: str, raw: bytes, n: int, b: Behaviour) -> None:
        if b.latency_s:
            time.sleep(b.latency_s)
        if n <= b.slow_first:
            time.sleep(b.slow_s)
        if n <= b.fail_429_first:
            return self._send(429, b'{"error": {"message": "rate limited"}}', {"Retry-After": b.retry_after})
        if n <= b.fail_429_first + b.fail_500_first:
            return self._send(500, b'{"error": {"message": "internal error"}}')
        if b.always_status is not None:
            return self._send(b.always_status, json.dumps({"error": {"message": "bad request"}}).encode())
        try:
            req = json.loads(raw)
        except ValueError:
            return self._send(400, b'{"error": {"message": "body is not JSON"}}')
        if b.malformed:
            return self._send(200, b'{"id": "cmpl-1", "choices": [{"message": {"content": "4')
        chat = path.endswith("/chat/completions")
        if chat and (problem := tool_message_problem(req.get("messages") or [])):
            refusal = {"error": {"message": problem, "type": "invalid_request_error"}}
            return self._send(400, json.dumps(refusal).encode())
        prompt = ("\n\n".join(m.get("content") or "" for m in req.get("messages", [])) if chat
                  else str(req.get("prompt", "")))
        text, lo, hi = answer_for(prompt)
        scripted = b.fixed_text is not None
        if b.responder is not None and (answer := b.responder(prompt, str(req.get("model") or ""))) is not None:
            text, scripted = answer, True
        if b.fixed_text is not None:
            text = b.fixed_text
        if b.garbage:
            text = "lorem ipsum " * 5 + "the quick brown fox"
        finish = "stop"
        max_tokens = int(req.get("max_completion_tokens") or req.get("max_tokens") or 512)
        with self.server.lock:
            self.server.stats.output_caps += max_tokens * int(req.get("n") or 1)
        words = text.split(" ")
        if b.truncate or len(words) > max_tokens:
            text = " ".join(words[: max(1, min(max_tokens, len(words) // 2))])
            finish = "length"
        k_n = int(req.get("n") or 1)
        want_lp = bool(req.get("logprobs")) and b.logprobs_supported
        k = int(req.get("top_logprobs") or (req.get("logprobs") if not chat else 0) or 5)
        choices = []
        for i in range(k_n):
            t = text if i == 0 or scripted else answer_for(f"{prompt}#{i}")[0]
            first_tok = t.split("\n")[0].split(" ")[0][:4] or t[:1]
            centre = int(first_tok) if scripted and first_tok.isdigit() else None
            top = top_logprobs_for(prompt, lo, hi, k, centre)
            if first_tok not in top:
                top[first_tok] = -0.1
            if chat:
                c: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": finish}
                if want_lp:
                    c["logprobs"] = {"content": [{"token": first_tok, "logprob": top[first_tok],
                                                  "top_logprobs": [{"token": tt, "logprob": lp} for tt, lp in top.items()]}]}
            else:
                c = {"index": i, "text": t, "finish_reason": finish}
                if want_lp:
                    c["logprobs"] = {"tokens": [first_tok], "token_logprobs": [top[first_tok]], "top_logprobs": [top]}
            choices.append(c)
        p_tok = len(prompt.split())
        c_tok = sum(len((c["message"]["content"] if chat else c["text"]).split()) for c in choices)
        with self.server.lock:
            self.server.stats.prompt_tokens += p_tok
            self.server.stats.completion_tokens += c_tok
        body = {"id": f"cmpl-{n}", "object": "chat.completion" if chat else "text_completion",
                "model": b.model, "choices": choices,
                "usage": {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok}}
        self._send(200, json.dumps(body).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, addr: tuple[str, int], behaviour: Behaviour):
        super().__init__(addr, _Handler)
        self.behaviour = behaviour
        self.stats = Stats()
        self.lock = threading.Lock()


@dataclass
class FakeServerHandle:
    base_url: str
    _server: _Server

    def stats(self) -> Stats:
        with self._server.lock:
            return Stats(**json.loads(json.dumps(asdict(self._server.stats))))

    def reset(self) -> None:
        with self._server.lock:
            self._server.stats = Stats()

    @property
    def behaviour(self) -> Behaviour:
        return self._server.behaviour


@contextlib.contextmanager
def running_fake_server(port: int = 0, **behaviour: Any) -> Iterator[FakeServerHandle]:
    """Start the server on 127.0.0.1 (a free port by default) in a thread; stop it on exit."""
    server = _Server(("127.0.0.1", port), Behaviour(**behaviour))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield FakeServerHandle(f"http://127.0.0.1:{server.server_address[1]}/v1", server)
    finally:
        server.shutdown()
        server.server_close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible judge server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--fail-429-first", type=int, default=0)
    ap.add_argument("--fail-500-first", type=int, default=0)
    args = ap.parse_args(argv)
    server = _Server(("127.0.0.1", args.port), Behaviour(
        latency_s=args.latency_ms / 1000, fail_429_first=args.fail_429_first, fail_500_first=args.fail_500_first))
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
