"""Any OpenAI-compatible server (`provider: openai-compatible`, the default of `backend: openai` files).

Sends what the Chat Completions API documents and leaves defaults out, so servers that lack a field
(Ollama, TGI) never see it. A raw prompt goes to /completions.
"""
from __future__ import annotations

from typing import Any

from judges.backends.base import JudgeRequest, JudgeResponse
from judges.backends.errors import MalformedResponseError
from judges.providers.base import Provider, ProviderSettings

DEFAULT_TOP_LOGPROBS = 20  # G-Eval's default: enough alternatives to cover a 1-10 scale


def api_root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class OpenAICompatible(Provider):
    name = "openai-compatible"
    title = "an OpenAI-compatible server"
    max_top_logprobs = 20
    chat_only = False  # no /completions: a raw prompt is sent as the user message
    docs = {"Chat Completions API": "https://platform.openai.com/docs/api-reference/chat/create"}

    def root(self, settings: ProviderSettings) -> str:
        return api_root(settings.base_url)

    def models_url(self, settings: ProviderSettings) -> str:
        return self.root(settings) + "/models"

    def url(self, settings: ProviderSettings, request: JudgeRequest) -> str:
        chat = request.messages is not None or self.chat_only
        return self.root(settings) + ("/chat/completions" if chat else "/completions")

    def cap(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        """The output-token cap field(s)."""
        return {"max_tokens": 1 if request.mode == "logprob" else request.max_tokens}

    def sampling(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"temperature": request.temperature}
        if request.top_p != 1.0:
            body["top_p"] = request.top_p
        return body

    def schema_fields(self, settings: ProviderSettings, schema: dict) -> dict[str, Any]:
        """How the answer is held to `schema` (OpenAI's Structured Outputs shape by default)."""
        if not settings.supports_json_schema:
            return {}
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "judgement", "schema": schema, "strict": True}}}

    def top_logprobs(self, request: JudgeRequest) -> int:
        return min(self.max_top_logprobs, request.top_logprobs or (DEFAULT_TOP_LOGPROBS if request.mode == "logprob" else 0))

    def body(self, settings: ProviderSettings, request: JudgeRequest) -> dict[str, Any]:
        if request.messages is None and self.chat_only:
            request = JudgeRequest(messages=({"role": "user", "content": request.prompt},), **request.sampling())
        body: dict[str, Any] = {"model": settings.model, **self.sampling(settings, request),
                                **self.cap(settings, request)}
        if request.n != 1:
            body["n"] = request.n
        if request.seed is not None and settings.supports_seed:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        want_logprobs = request.logprobs or request.mode == "logprob"
        top_k = self.top_logprobs(request)
        if request.messages is not None:
            body["messages"] = [dict(m) for m in request.messages]
            if want_logprobs:
                body["logprobs"] = True
                if top_k:
                    body["top_logprobs"] = top_k
            if request.json_schema is not None:
                body.update(self.schema_fields(settings, request.json_schema))
        else:
            body["prompt"] = request.prompt
            if want_logprobs:
                body["logprobs"] = max(1, top_k)
        return body

    def read(self, data: Any, model: str) -> JudgeResponse:
        try:
            choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
            texts, reasons, logprobs, chosen = [], [], [], []
            for c in choices:
                if "message" in c:
                    msg = c["message"]
                    texts.append(msg.get("content") or msg.get("refusal") or "")
                    lp = _chat_logprobs(c)
                else:
                    texts.append(c["text"])
                    lp = _completion_logprobs(c)
                reasons.append(c.get("finish_reason") or "")
                if lp is not None:
                    logprobs.append(lp[0])
                    chosen.append(lp[1])
            usage = data.get("usage") or {}
            details = usage.get("completion_tokens_details") or {}
            return JudgeResponse(
                reasoning_tokens=int(details.get("reasoning_tokens") or 0),
                texts=texts, finish_reasons=reasons,
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
                logprobs=logprobs if len(logprobs) == len(texts) and logprobs else None,
                chosen_tokens=chosen if len(chosen) == len(texts) and chosen else None,
                model=data.get("model") or model, raw=data,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise MalformedResponseError(f"unexpected response shape: {exc!r}") from exc


def _chat_logprobs(choice: dict) -> tuple[list[dict[str, float]], list[str]] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    positions, chosen = [], []
    for pos in content:
        top = {t["token"]: float(t["logprob"]) for t in pos.get("top_logprobs") or []}
        top.setdefault(pos["token"], float(pos["logprob"]))
        positions.append(top)
        chosen.append(pos["token"])
    return positions, chosen


def _completion_logprobs(choice: dict) -> tuple[list[dict[str, float]], list[str]] | None:
    lp = choice.get("logprobs")
    if not lp or not lp.get("tokens"):
        return None
    positions = []
    tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
    for tok, tok_lp, top in zip(lp["tokens"], lp.get("token_logprobs") or [], tops):
        d = {k: float(v) for k, v in (top or {}).items()}
        if tok_lp is not None:
            d.setdefault(tok, float(tok_lp))
        positions.append(d)
    return positions, list(lp["tokens"])
