"""Local Hugging Face causal LM (seed 000's path): AutoTokenizer + AutoModelForCausalLM.

Two modes per request:
- generate: greedy (temperature 0) or sampled, `max_tokens` new tokens, optional top-k
  logprobs per generated position;
- logprob: one forward pass, the next-token distribution restricted to report the
  allowed score tokens (G-Eval) plus the top-k of the whole vocabulary.
Batches are sorted by length and LEFT-padded (position ids follow the attention mask), so
a batched answer equals the one-at-a-time answer. torch/transformers are imported lazily.

Where the GPU time goes (issue 14): prompts are tokenised once, all together, before the first
forward pass; batches are length-bucketed and sized by tokens (`max_batch_tokens`) as well as by
items; logprob mode asks the model for the last position's logits only (`logits_to_keep=1`:
the [batch, length, vocabulary] tensor was most of the memory) and does every batch's
post-processing on the device, with one transfer to the host; score-token ids are encoded
once per set of allowed strings, and token strings decoded once per id.
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
                 trust_remote_code: bool = False, max_input_tokens: int | None = None,
                 max_batch_tokens: int | None = None):
        self.model_id = model
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens  # padded tokens per forward pass; None: items only
        self.dtype = dtype
        self.device_pref = device
        self.trust_remote_code = trust_remote_code
        self.max_input_tokens = max_input_tokens
        self._model: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()  # one forward pass at a time on the model
        self._score_ids: dict[tuple[str, ...], dict[str, int]] = {}
        self._token_text: dict[int, str] = {}

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
            raise BackendNotAvailable("torch and transformers are needed for local models: install them with "
                                      "`pip install '.[local-models]'` (in the project's .venv: "
                                      "`.venv/bin/pip install -e '.[local-models]'`), or use the judge image "
                                      "built with --build-arg EXTRAS=local-models") from exc
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
        self.adopt(model, tok)

    def adopt(self, model: Any, tok: Any) -> None:
        """Use a model and tokenizer already in memory (the GPU bench shares one copy of the weights)."""
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
        """The token id of each allowed score string that is one token (no special tokens); encoded
        once per set of allowed strings, not once per item."""
        key = tuple(allowed)
        if key not in self._score_ids:
            out = {}
            for s in allowed:
                ids = self._tok.encode(s, add_special_tokens=False)
                if len(ids) == 1:  # multi-token scores cannot be read from one distribution
                    out[s] = ids[0]
            self._score_ids[key] = out
        return self._score_ids[key]

    def token_text(self, token_id: int) -> str:
        if token_id not in self._token_text:
            self._token_text[token_id] = self._tok.decode([token_id])
        return self._token_text[token_id]

    # ------------------------------------------------------------------ batched work (blocking)
    def _tokenise(self, texts: list[str], templated: list[bool]) -> list[list[int]]:
        """Token ids of every prompt, once (a rendered chat template already holds its special tokens)."""
        ids: list[list[int]] = [[] for _ in texts]
        for flag in (True, False):
            idx = [i for i, t in enumerate(templated) if t == flag]
            if not idx:
                continue
            enc = self._tok([texts[i] for i in idx], add_special_tokens=not flag,
                            truncation=self.max_input_tokens is not None, max_length=self.max_input_tokens)
            for i, row in zip(idx, enc["input_ids"]):
                ids[i] = list(row)
        return ids

    def _encode(self, ids: list[list[int]]) -> Any:
        """LEFT-padded tensors on the device from token ids (no second tokenisation)."""
        enc = self._tok.pad({"input_ids": ids}, padding=True, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items()}

    def _last_logits(self, enc: Any) -> Any:
        mask = enc["attention_mask"]
        pos = (mask.long().cumsum(-1) - 1).clamp(min=0)
        try:  # only the last position: the full [batch, length, vocabulary] logits are never made
            out = self._model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos, logits_to_keep=1)
        except TypeError:  # a model class without logits_to_keep
            out = self._model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=pos)
        return out.logits[:, -1, :]

    def _logprob_batch(self, reqs: list[JudgeRequest], ids: list[list[int]]) -> list[JudgeResponse]:
        import torch

        enc = self._encode(ids)
        with torch.inference_mode():
            logp = torch.log_softmax(self._last_logits(enc).float(), dim=-1)
            k = max(max(1, r.top_logprobs or 5) for r in reqs)
            top_v, top_i = torch.topk(logp, k, dim=-1)
            allowed = [self.score_token_ids(r.allowed_tokens or ()) for r in reqs]
            width = max((len(a) for a in allowed), default=0)
            if width:
                index = torch.zeros((len(reqs), width), dtype=torch.long, device=logp.device)
                for b, a in enumerate(allowed):
                    if a:
                        index[b, :len(a)] = torch.tensor(list(a.values()), dtype=torch.long)
                score_lp = torch.gather(logp, 1, index)
            # one transfer to the host for the whole batch
            host = [t.cpu() for t in (top_v, top_i, score_lp if width else top_v[:, :0])]
        top_v, top_i, score_lp = (t.tolist() for t in host)
        lengths = [len(row) for row in ids]
        out = []
        for b, req in enumerate(reqs):
            kb = max(1, req.top_logprobs or 5)
            pos_d = {self.token_text(int(i)): float(v) for v, i in zip(top_v[b][:kb], top_i[b][:kb])}
            for j, s in enumerate(allowed[b]):
                pos_d[s] = float(score_lp[b][j])
            best = max(pos_d, key=pos_d.get) if not req.allowed_tokens else max(
                (s for s in req.allowed_tokens if s in pos_d), key=lambda s: pos_d[s], default=None) or max(pos_d, key=pos_d.get)
            out.append(JudgeResponse(texts=[best], input_tokens=lengths[b], output_tokens=0,
                                     finish_reasons=["logprob"], logprobs=[[pos_d]], chosen_tokens=[[best]],
                                     model=self.model_id))
        return out

    def _generate_batch(self, reqs: list[JudgeRequest], ids: list[list[int]]) -> list[JudgeResponse]:
        import torch

        # requests in one generate() call share sampling settings (grouped by run_blocking)
        r0 = reqs[0]
        enc = self._encode(ids)
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
        token_ids = self._tokenise([t for t, _ in rendered], [templated for _, templated in rendered])
        lengths = [len(ids) for ids in token_ids]
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            key = (("logprob",) if r.mode == "logprob" else ("generate", r.temperature, r.top_p, r.max_tokens, r.n,
                                                               r.seed, r.logprobs, r.top_logprobs)) + (rendered[i][1],)
            groups.setdefault(key, []).append(i)
        results: list[Result | None] = [None] * len(requests)
        for key, idx in groups.items():
            idx.sort(key=lambda i: lengths[i])
            for chunk in self.batches(idx, lengths):
                t0 = time.perf_counter()
                try:
                    with self._lock:
                        fn = self._logprob_batch if key[0] == "logprob" else self._generate_batch
                        got = fn([requests[i] for i in chunk], [token_ids[i] for i in chunk])
                except (RuntimeError, ValueError) as exc:  # e.g. CUDA OOM, over-long input
                    got = [PermanentBackendError(f"local model failed: {exc}")] * len(chunk)
                dt = time.perf_counter() - t0
                for i, g in zip(chunk, got):
                    if isinstance(g, JudgeResponse):
                        g.latency_s = dt
                    results[i] = g
        return results  # type: ignore[return-value]

    def batches(self, idx: list[int], lengths: Sequence[int]) -> list[list[int]]:
        """Consecutive runs of length-sorted requests: at most `batch_size` items, and at most
        `max_batch_tokens` padded tokens (items x the longest), so short prompts go in large
        batches and long ones in small."""
        out: list[list[int]] = []
        current: list[int] = []
        for i in idx:
            longest = max([lengths[j] for j in current] + [lengths[i]])
            too_many = len(current) >= self.batch_size
            too_big = self.max_batch_tokens is not None and current and longest * (len(current) + 1) > self.max_batch_tokens
            if too_many or too_big:
                out.append(current)
                current = []
            current.append(i)
        if current:
            out.append(current)
        return out

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
