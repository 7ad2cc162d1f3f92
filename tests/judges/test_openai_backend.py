"""The OpenAI-compatible backend against a real HTTP server on loopback (judges.fakeserver)."""
from __future__ import annotations

import asyncio
import random
import time

import httpx
import pytest

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.backends.errors import (
    BackendTimeout, MalformedResponseError, PermanentBackendError, RateLimited, RetryableBackendError,
)
from judges.backends.openai_compat import (
    OpenAICompatBackend, OpenAICompatConfig, backoff_delay, build_body, parse_retry_after,
)
from judges.fakeserver import answer_for, running_fake_server


def backend(url: str, **cfg) -> OpenAICompatBackend:
    base = {"base_url": url, "model": "judge-x", "backoff_base_s": 0.01, "backoff_max_s": 0.05, "max_retries": 4}
    return OpenAICompatBackend({**base, **cfg}, rng=random.Random(0))


def chat(text: str, **kw) -> JudgeRequest:
    return JudgeRequest(messages=({"role": "user", "content": text},), **kw)


def run(coro):
    return asyncio.run(coro)


def test_answers_come_back_in_request_order():
    prompts = [f"Rate answer number {i} from 1 to 5." for i in range(12)]
    with running_fake_server(latency_s=0.01) as srv:
        out = run(backend(srv.base_url, max_concurrency=4).score_many([chat(p) for p in prompts]))
    assert [o.text for o in out] == [answer_for(p)[0] for p in prompts]


def test_429_with_retry_after_is_retried_and_honoured():
    with running_fake_server(fail_429_first=2, retry_after="0.2") as srv:
        t0 = time.perf_counter()
        (out,) = run(backend(srv.base_url).score_many([chat("Rate from 1 to 5")]))
        elapsed = time.perf_counter() - t0
        st = srv.stats()
    assert isinstance(out, JudgeResponse)
    assert st.completion_requests == 3
    assert st.statuses == {"429": 2, "200": 1}
    assert elapsed >= 0.4  # two waits of at least Retry-After, far above the 0.05 s backoff cap


def test_5xx_retried_until_success():
    with running_fake_server(fail_500_first=3) as srv:
        (out,) = run(backend(srv.base_url).score_many([chat("x")]))
        assert srv.stats().completion_requests == 4
    assert isinstance(out, JudgeResponse)


def test_retries_are_bounded():
    with running_fake_server(fail_500_first=100) as srv:
        (out,) = run(backend(srv.base_url, max_retries=2).score_many([chat("x")]))
        assert srv.stats().completion_requests == 3
    assert isinstance(out, RetryableBackendError) and out.status == 500


def test_timeout_is_retried():
    with running_fake_server(slow_first=1, slow_s=1.0) as srv:
        (out,) = run(backend(srv.base_url, timeout_s=0.3).score_many([chat("x")]))
        assert srv.stats().completion_requests == 2
    assert isinstance(out, JudgeResponse)


def test_timeout_every_time_gives_timeout_error():
    with running_fake_server(slow_first=10, slow_s=0.6) as srv:
        (out,) = run(backend(srv.base_url, timeout_s=0.2, max_retries=1).score_many([chat("x")]))
    assert isinstance(out, BackendTimeout)


def test_400_is_not_retried():
    with running_fake_server(always_status=400) as srv:
        (out,) = run(backend(srv.base_url).score_many([chat("x")]))
        assert srv.stats().completion_requests == 1
    assert isinstance(out, PermanentBackendError) and out.status == 400
    with pytest.raises(PermanentBackendError):
        with running_fake_server(always_status=401) as srv:
            run(backend(srv.base_url).score(chat("x")))


def test_malformed_body_is_an_error_result_not_a_crash():
    with running_fake_server(malformed=True) as srv:
        out = run(backend(srv.base_url, max_retries=1).score_many([chat("a"), chat("b")]))
        assert srv.stats().completion_requests == 4  # retried once each
    assert all(isinstance(o, MalformedResponseError) for o in out)


def test_usage_is_summed_from_the_server():
    prompts = [f"item {i} " * (i + 1) for i in range(6)]
    with running_fake_server() as srv:
        out = run(backend(srv.base_url).score_many([chat(p) for p in prompts]))
        st = srv.stats()
    assert sum(o.input_tokens for o in out) == st.prompt_tokens == sum(len(p.split()) for p in prompts)
    assert sum(o.output_tokens for o in out) == st.completion_tokens > 0


def test_concurrency_bound_is_respected_and_reached():
    with running_fake_server(latency_s=0.05) as srv:
        run(backend(srv.base_url, max_concurrency=3).score_many([chat(f"p{i}") for i in range(15)]))
        st = srv.stats()
    assert st.max_in_flight == 3


def test_truncated_output_reports_length():
    with running_fake_server(truncate=True) as srv:
        (out,) = run(backend(srv.base_url).score_many([chat("Rate from 1 to 5")]))
    assert out.finish_reason == "length"


def test_logprobs_chat_and_completions():
    with running_fake_server() as srv:
        b = backend(srv.base_url)
        c, p = run(b.score_many([chat("Rate from 1 to 5", logprobs=True, top_logprobs=10),
                                 JudgeRequest(prompt="Rate from 1 to 5", logprobs=True, top_logprobs=10)]))
        assert srv.stats().paths == {"/v1/chat/completions": 1, "/v1/completions": 1}
    for r in (c, p):
        assert r.logprobs is not None and set("12345") <= set(r.logprobs[0][0])
        assert r.chosen_tokens[0][0] == r.text.split("\n")[0]


def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("CONCORD_TEST_API_KEY", "sk-test-123")
    with running_fake_server() as srv:
        run(backend(srv.base_url, api_key_env="CONCORD_TEST_API_KEY").score_many([chat("x")]))
        assert srv.stats().authorization == "Bearer sk-test-123"
    monkeypatch.delenv("CONCORD_TEST_API_KEY")
    with running_fake_server() as srv:
        (out,) = run(backend(srv.base_url, api_key_env="CONCORD_TEST_API_KEY").score_many([chat("x")]))
        assert srv.stats().completion_requests == 0
    assert isinstance(out, PermanentBackendError)
    with pytest.raises(ValueError):
        OpenAICompatConfig.from_dict({"base_url": "http://x", "model": "m", "api_key": "secret"})


def test_models_endpoint_and_stats():
    with running_fake_server(model="fake-7b") as srv:
        data = httpx.get(srv.base_url + "/models").json()
        assert data["data"][0]["id"] == "fake-7b"
        assert httpx.get(srv.base_url + "/_stats").json()["requests"] == 2


def test_body_carries_schema_only_when_the_server_offers_it():
    req = chat("x", json_schema={"type": "object"}, seed=7)
    path, body = build_body(req, OpenAICompatConfig(base_url="u", model="m"))
    assert path == "/chat/completions" and "response_format" not in body and body["seed"] == 7
    _, body = build_body(req, OpenAICompatConfig(base_url="u", model="m", supports_json_schema=True))
    assert body["response_format"]["json_schema"]["schema"] == {"type": "object"}
    _, body = build_body(chat("x", mode="logprob"), OpenAICompatConfig(base_url="u", model="m"))
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20


def test_retry_after_and_backoff():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    assert parse_retry_after("soon") is None
    rng = random.Random(1)
    delays = [backoff_delay(a, 0.5, 4.0, rng) for a in range(8) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays)
    assert max(backoff_delay(0, 0.5, 4.0, rng) for _ in range(200)) <= 0.5  # full jitter: cap = base at attempt 0
    assert isinstance(RateLimited("x"), RetryableBackendError)


def test_an_https_endpoint_with_a_certificate_nobody_signed_is_refused(tmp_path):
    """Every client shares one TLS context (judges/backends/tls.py), and it still verifies: a real TLS server on
    loopback with a self-signed certificate gets no judge request, the slot ends as a connection error."""
    import http.server
    import ssl
    import subprocess
    import threading

    from judges.backends.tls import tls_context

    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    served = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            served.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        judge = backend(f"https://127.0.0.1:{server.server_address[1]}/v1", max_retries=0)
        (out,) = run(judge.score_many([chat("Rate from 1 to 5")]))
    finally:
        server.shutdown()
        server.server_close()
    assert not isinstance(out, JudgeResponse)
    assert "CERTIFICATE_VERIFY_FAILED" in str(out), out
    assert served == []
    assert judge._new_client({})._transport._pool._ssl_context is tls_context()
    assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
