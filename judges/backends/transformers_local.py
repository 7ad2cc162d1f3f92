"""Local Hugging Face causal LM (seed 000's path): AutoTokenizer + AutoModelForCausalLM.

Two modes per request:
- generate: greedy (temperature 0) or sampled, `max_tokens` new tokens, optional top-k
  logprobs per generated position;
- logprob: one forward pass, the next-token distribution restricted to report the
  allowed score tokens (G-Eval) plus the top-k of the whole vocabulary.
Batches are sorted by length and LEFT-padded (position ids follow the attention mask), so
a batched answer equals the one-at-a-time answer. torch/transformers are imported lazily.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Sequence

from judges.backends.base import Backend, JudgeRequest, JudgeResponse, Result
from judges.backends.errors import BackendError, BackendNotAvailable, PermanentBackendError


class TransformersBackend(Backend):
    name = "transformers_local"

    def __init__(self, model: str, *, batch_size: int = 8, dtype: str | None = None, device: str | None = None,
                 trust_remote_code: bool = False, max_input_tokens: int | None = None):
        self.model_id = model
        self.batch_size = batch_size
        self.dtype = dtype
        self.device_pref = device
        self.trust_remote_code = trust_remote_code
        self.max_input_tokens = max_input_tokens
        self._model: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()  # one forward pass at a time on the model

    def identity(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model_id, "dtype": self.dtype}

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise BackendNotAvailable("torch and transformers are needed for local models") from exc
        try:
            tok = AutoTokenizer.from_pretrained(self.model_id, trust_remote_code=self.trust_remote_code)
            kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
            if self.dtype:
                kwargs["dtype"] = getattr(torch, self.dtype)
            use_auto = self.device_pref in (None, "auto") and torch.cuda.is_available() and _has_accelerate()
            if use_auto:
                kwargs["device_map"] = "auto"
            model = AutoModelForCausalLM.from_pretrained(self.model_id, **kwargs)
            if not use_auto:
                dev = self.device_pref if self.device_pref not in (None, "auto") else (
                    "cuda" if torch.cuda.is_available() else "cpu")
                model = model.to(dev)
        except (OSError, ValueError) as exc:
            raise BackendNotAvailable(f"cannot load {self.model_id}: {exc}") from exc
        model.eval()
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token if tok.eos_token is not None else tok.unk_token
        self._tok, self._model = tok, model

    @property
    def device(self) -> Any:
        return next(self._model.parameters()).device

    # ------------------------------------------------------------------ prompts
    def render(self, request: JudgeRequest) -> tuple[str, bool]:
        """(text, templated): the chat template when the tokenizer has one, plain text otherwise."""
        if request.messages is not None and getattr(self._tok, "chat_template", None):
            text = self._tok.apply_chat_template(list(request.messages), tokenize=False, add_generation_prompt=True)
            return text, True
        return request.prompt_text(), False

    def score_token_ids(self, allowed: Sequence[str]) -> dict[str, int]:
        """The first token id of each allowed score string (no special tokens)."""
        out = {}
        for s in allowed:
            ids = self._tok.encode(s, add_special_tokens=False)
            if len(ids) != 1:
                continue  # multi-token scores cannot be read from one distribution
            out[s] = ids[0]
        return out

    # ------------------------------------------------------------------ batched work (blocking)
    def _encode(self, texts: list[str], templated: bool) -> Any:
        # a rendered chat template already holds its special tokens
        enc = self._tok(texts, return_tensors="pt", padding=True, add_special_tokens=not templated,
                        truncation=self.max_input_tokens is not None, max_length=self.max_input_tokens)
        return {k: v.to(self.device) for k, v in enc.items()}

    def _logprob_batch(self, reqs: list[JudgeRequest], texts: list[str], templated: bool) -> list[JudgeResponse]:
        import torch

        enc = self._encode(texts, templated)
        mask = enc["attention_mask"]
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self._model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos).logits[:, -1, :]
        logp = torch.log_softmax(logits.float(), dim=-1)
        out = []
        for b, req in enumerate(reqs):
            k = max(1, req.top_logprobs or 5)
            top_v, top_i = torch.topk(logp[b], k)
            pos_d = {self._tok.decode([int(i)]): float(v) for v, i in zip(top_v, top_i)}
            for s, tid in self.score_token_ids(req.allowed_tokens or ()).items():
                pos_d[s] = float(logp[b, tid])
            best = max(pos_d, key=pos_d.get) if not req.allowed_tokens else max(
                (s for s in req.allowed_tokens if s in pos_d), key=lambda s: pos_d[s], default=None) or max(pos_d, key=pos_d.get)
            out.append(JudgeResponse(texts=[best], input_tokens=int(mask[b].sum()), output_tokens=0,
                                     finish_reasons=["logprob"], logprobs=[[pos_d]], chosen_tokens=[[best]],
                                     model=self.model_id))
        return out

    def _generate_batch(self, reqs: list[JudgeRequest], texts: list[str], templated: bool) -> list[JudgeResponse]:
        import torch

        # requests in one generate() call share sampling settings (grouped by run_blocking)
        r0 = reqs[0]
        enc = self._encode(texts, templated)
        sample = r0.temperature > 0
        if r0.seed is not None:
            torch.manual_seed(r0.seed)
        kwargs: dict[str, Any] = dict(max_new_tokens=r0.max_tokens, do_sample=sample, num_return_sequences=r0.n,
                                      pad_token_id=self._tok.pad_token_id, return_dict_in_generate=True,
                                      output_scores=r0.logprobs)
        if sample:
            kwargs.update(temperature=r0.temperature, top_p=r0.top_p)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            gen = self._model.generate(**enc, **kwargs)
        seqs = gen.sequences[:, enc["input_ids"].shape[1]:]
        eos = self._tok.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
        out = []
        for b, req in enumerate(reqs):
            txts, reasons, lps, chosen, n_out = [], [], [], [], 0
            for j in range(req.n):
                row = b * req.n + j
                ids = seqs[row].tolist()
                length = len(ids)
                for p, t in enumerate(ids):
                    if t in eos_ids:
                        length = p
                        break
                n_out += length
                txts.append(self._tok.decode(ids[:length], skip_special_tokens=True))
                reasons.append("stop" if length < len(ids) or length < req.max_tokens else "length")
                if req.logprobs and gen.scores:
                    k = max(1, req.top_logprobs or 1)
                    positions, toks = [], []
                    for p in range(length):
                        lp = torch.log_softmax(gen.scores[p][row].float(), dim=-1)
                        tv, ti = torch.topk(lp, k)
                        d = {self._tok.decode([int(i)]): float(v) for v, i in zip(tv, ti)}
                        tok_s = self._tok.decode([ids[p]])
                        d.setdefault(tok_s, float(lp[ids[p]]))
                        positions.append(d)
                        toks.append(tok_s)
                    lps.append(positions)
                    chosen.append(toks)
            out.append(JudgeResponse(texts=txts, input_tokens=int(enc["attention_mask"][b].sum()), output_tokens=n_out,
                                     finish_reasons=reasons, logprobs=lps or None, chosen_tokens=chosen or None,
                                     model=self.model_id))
        return out

    def run_blocking(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        """All requests, batched: grouped by mode and sampling, sorted by length, LEFT-padded."""
        try:
            self.load()
        except BackendError as exc:
            return [exc] * len(requests)
        rendered = [self.render(r) for r in requests]
        texts = [t for t, _ in rendered]
        lengths = [len(ids) for ids in self._tok(texts, add_special_tokens=False)["input_ids"]]
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            key = (("logprob",) if r.mode == "logprob" else ("generate", r.temperature, r.top_p, r.max_tokens, r.n,
                                                               r.seed, r.logprobs, r.top_logprobs)) + (rendered[i][1],)
            groups.setdefault(key, []).append(i)
        results: list[Result | None] = [None] * len(requests)
        for key, idx in groups.items():
            idx.sort(key=lambda i: lengths[i])
            for start in range(0, len(idx), self.batch_size):
                chunk = idx[start:start + self.batch_size]
                t0 = time.perf_counter()
                try:
                    with self._lock:
                        fn = self._logprob_batch if key[0] == "logprob" else self._generate_batch
                        got = fn([requests[i] for i in chunk], [texts[i] for i in chunk], key[-1])
                except (RuntimeError, ValueError) as exc:  # e.g. CUDA OOM, over-long input
                    got = [PermanentBackendError(f"local model failed: {exc}")] * len(chunk)
                dt = time.perf_counter() - t0
                for i, g in zip(chunk, got):
                    if isinstance(g, JudgeResponse):
                        g.latency_s = dt
                    results[i] = g
        return results  # type: ignore[return-value]

    async def score_many(self, requests: Sequence[JudgeRequest]) -> list[Result]:
        if not requests:
            return []
        return await asyncio.to_thread(self.run_blocking, list(requests))


def _has_accelerate() -> bool:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        return False
    return True
