"""The local transformers backend on a tiny Llama built from a config on disk (random weights)."""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from judges.backends.base import JudgeRequest
from judges.backends.transformers_local import TransformersBackend
from judges.methods import MethodSettings, Target, geval
from tests.judges.tiny_model import build_tiny_llama

if TYPE_CHECKING:
    import torch

PROMPTS = ["rate the response", "please give a number only from 1 to 5 score",
           "good", "bad answer to the question please rate the response from 1 to 5"]
SCORES = tuple("12345")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


def requests(mode: str, **kw) -> list[JudgeRequest]:
    return [JudgeRequest(messages=({"role": "user", "content": p},), mode=mode, **kw) for p in PROMPTS]


def reference_logprobs(model_dir, text: str) -> torch.Tensor:
    """Next-token log-probabilities computed directly with transformers, one unpadded sequence."""
    import torch  # here, not at the top: collecting the suite on every worker imported it (2.4 s of CPU each)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        return torch.log_softmax(model(input_ids=ids).logits[0, -1].float(), -1)


def test_logprob_mode_batched_equals_one_at_a_time_and_reference(model_dir):
    batched = TransformersBackend(str(model_dir), batch_size=4, device="cpu")
    single = TransformersBackend(str(model_dir), batch_size=1, device="cpu")
    reqs = requests("logprob", allowed_tokens=SCORES, top_logprobs=3)
    out_b = asyncio.run(batched.score_many(reqs))
    out_s = asyncio.run(single.score_many(reqs))
    lengths = {r.input_tokens for r in out_b}
    assert len(lengths) == len(PROMPTS)  # different lengths: the batch was really padded
    for b, s, req in zip(out_b, out_s, reqs):
        for t in SCORES:
            assert b.logprobs[0][0][t] == pytest.approx(s.logprobs[0][0][t], abs=1e-5)
        # against transformers directly, on the chat-templated text without padding
        text, templated = single.render(req)
        assert templated and text.endswith("assistant : ")
        ref = reference_logprobs(model_dir, text)
        tok = single._tok
        for t in SCORES:
            assert b.logprobs[0][0][t] == pytest.approx(float(ref[tok.convert_tokens_to_ids(t)]), abs=1e-5)
        assert b.text == max(SCORES, key=lambda t: b.logprobs[0][0][t])
    # results come back in request order even though batches are sorted by length
    assert [r.input_tokens for r in out_b] == [r.input_tokens for r in out_s]


def test_generate_mode_greedy_batched_equals_single(model_dir):
    batched = TransformersBackend(str(model_dir), batch_size=4, device="cpu")
    single = TransformersBackend(str(model_dir), batch_size=1, device="cpu")
    reqs = requests("generate", max_tokens=6, logprobs=True, top_logprobs=2)
    out_b = asyncio.run(batched.score_many(reqs))
    out_s = asyncio.run(single.score_many(reqs))
    assert [o.text for o in out_b] == [o.text for o in out_s]
    for o in out_b:
        assert o.output_tokens <= 6 and o.finish_reason in ("stop", "length")
        assert o.logprobs is not None and len(o.logprobs[0]) == o.output_tokens
        assert all(lp <= 0 for pos in o.logprobs[0] for lp in pos.values())


def test_sampled_generation_is_reproducible_with_a_seed(model_dir):
    b = TransformersBackend(str(model_dir), batch_size=4, device="cpu")
    reqs = requests("generate", max_tokens=8, temperature=1.0, seed=123, n=2)
    one, two = asyncio.run(b.score_many(reqs)), asyncio.run(b.score_many(reqs))
    assert [o.texts for o in one] == [o.texts for o in two]
    assert all(len(o.texts) == 2 for o in one)


def test_geval_through_the_local_backend(model_dir):
    rubric = {"slug": "t", "name": "t", "criteria": [{"key": "q", "name": "quality", "kind": "likert", "min": 1, "max": 5}]}
    item = {"id": "x", "context": "question", "outputs": [{"content": "good answer"}]}
    b = TransformersBackend(str(model_dir), batch_size=2, device="cpu")
    (res,) = asyncio.run(geval(b, rubric, [Target(item, 0)], MethodSettings()))
    dist = res.detail["distribution"]
    assert res.status == "ok" and set(dist) == set(SCORES) and sum(dist.values()) == pytest.approx(1.0)
    assert res.value == pytest.approx(sum(int(k) * p for k, p in dist.items()))
    assert 0 < res.doubt["score_mass"] < 1


def test_missing_model_is_an_error_result(tmp_path):
    b = TransformersBackend(str(tmp_path / "nope"))
    (out,) = asyncio.run(b.score_many(requests("logprob")[:1]))
    assert type(out).__name__ == "BackendNotAvailable"


def test_logprob_mode_asks_for_the_last_position_only_and_transfers_once(model_dir):
    backend = TransformersBackend(str(model_dir), batch_size=4, device="cpu")
    backend.load()
    shapes = []
    handle = backend._model.register_forward_hook(lambda module, args, output: shapes.append(tuple(output.logits.shape)))
    try:
        asyncio.run(backend.score_many(requests("logprob", allowed_tokens=SCORES, top_logprobs=3)))
    finally:
        handle.remove()
    vocab = backend._model.config.vocab_size
    assert shapes == [(4, 1, vocab)]  # one forward pass, one position of logits, not [batch, length, vocab]
    assert list(backend._score_ids) == [SCORES]  # encoded once for the four items


def test_batches_are_sized_by_tokens_and_answers_do_not_change(model_dir):
    by_items = TransformersBackend(str(model_dir), batch_size=4, device="cpu")
    by_tokens = TransformersBackend(str(model_dir), batch_size=4, device="cpu", max_batch_tokens=30)
    assert by_tokens.batches([0, 1, 2, 3], [5, 6, 10, 20]) == [[0, 1, 2], [3]]  # 3 x 10 fits, 2 x 20 does not
    assert by_items.batches([0, 1, 2, 3], [5, 6, 10, 20]) == [[0, 1, 2, 3]]
    reqs = requests("logprob", allowed_tokens=SCORES, top_logprobs=3)
    a, b = asyncio.run(by_items.score_many(reqs)), asyncio.run(by_tokens.score_many(reqs))
    for x, y in zip(a, b):
        for t in SCORES:
            assert x.logprobs[0][0][t] == pytest.approx(y.logprobs[0][0][t], abs=1e-5)
