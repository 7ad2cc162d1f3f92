"""Judge runs through llama.cpp's own OpenAI-compatible server (llama-cpp-python) on a tiny random
Llama: every preset's methods in generate mode, G-Eval on the server's logprobs, a pairwise judge.

The model's answers are noise, so a slot is scored only where its answer happens to parse; the
rest must be unparsed with the reason and the raw answer kept. Tokens and cost must be the
server's own `usage`, as recorded by a wiretap between Concord and the server.
"""
from __future__ import annotations

import json
import math
from collections import Counter

import pytest
from django.db.models import Count

from annotation.simulation.items import items_for
from judges.llamacpp import MODEL_NAME
from judges.models import JudgeScore
from judges.services.runs import judge_run_start
from tests.conftest import DEMO_DIR
from tests.judges_platform.conftest import wait_run_ends

pytestmark = pytest.mark.django_db(transaction=True)

PRICE_IN, PRICE_OUT = 0.5, 1.5  # USD per 1M tokens
# (preset, method, method options): every generate-mode method each preset's judges use.
GENERATE = [
    ("feedback-000", "all_in_one", {}), ("feedback-000", "per_criterion", {}),
    ("rrgen-001", "all_in_one", {}), ("rrgen-001", "per_criterion", {}),
    ("codegen-002", "all_in_one", {}), ("codegen-002", "per_criterion", {}),
    ("fulltext-004", "per_criterion", {}), ("fulltext-004", "all_in_one", {}),
    ("aqua-003", "label", {}), ("aqua-003", "legacy", {}), ("aqua-003", "modular", {}),
    ("aqua-003", "escalation", {"experts": ["aqua-expert"], "router": "deterministic"}),
    ("compare-pairwise", "pairwise", {"key": "preference"}),
    ("compare-ranking", "ranking", {}), ("compare-ranking", "best_worst", {}),
]
# Calls per run where the method fixes them: one per output, or one per (output, criterion) slot.
CALLS = {"all_in_one": lambda run: run.n_outputs, "per_criterion": lambda run: run.n_expected,
         "label": lambda run: run.n_outputs, "legacy": lambda run: run.n_outputs}


def study_for(make_study, preset: str, n_items: int = 2):
    """A study of the preset with its first demo items (compare-*: simulated ones)."""
    if preset.startswith("compare-"):
        lines = [json.dumps(r) for r in items_for(preset, n_items, seed=3)]
    else:
        lines = (DEMO_DIR / f"{preset}.jsonl").read_text().splitlines()[:n_items]
    return make_study(preset, items_text="\n".join(lines) + "\n")


def why_not_scored(score) -> list[str]:
    """The reasons a method recorded for a slot it could not score: the parser's (per answer, for a
    pair's two orders), modular's unread sub-judges, escalation's path."""
    d = score.detail
    found = d.get("parse") or d.get("unparsed_signals") or d.get("escalation_reasons") or []
    return [x for x in ([found] if isinstance(found, str) else found) if x]


def run_through(tap, make_judge, study, method: str, options: dict, *, name: str = "llamacpp-judge", **fields):
    judge = make_judge(name, provider="llamacpp", endpoint=tap.base_url, model=MODEL_NAME, method=method,
                       price_in_per_m=PRICE_IN, price_out_per_m=PRICE_OUT, concurrency=2,
                       sampling={"temperature": 0, "max_tokens": fields.pop("max_tokens", 48)},
                       backend_options={"timeout_s": 120}, method_options={"chunk_size": 16, **options}, **fields)
    return wait_run_ends(judge_run_start(study=study, judge=judge), timeout=600)


def assert_each_slot_once(run) -> None:
    """One score per (item, output, criterion) slot, none twice, none missing."""
    rows = JudgeScore.objects.filter(run=run).values("item_id", "output_id", "criterion")
    assert not rows.annotate(n=Count("id")).filter(n__gt=1).exists()
    assert rows.count() == run.n_expected > 0


def assert_usage_is_the_servers(run, tap) -> None:
    """Stored tokens are the sum of the usage the server reported; cost is priced from them."""
    served = tap.completions()
    assert served and all(e.status == 200 for e in served), [e.response for e in served if e.status != 200][:2]
    tokens_in, tokens_out = tap.tokens()
    assert tokens_in > 0 and tokens_out > 0
    assert (run.tokens_in, run.tokens_out) == (tokens_in, tokens_out)
    assert run.cost_usd == pytest.approx((tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6)


def assert_unparsed_say_why(run, tap) -> None:
    """Every slot is scored, unparsed or truncated (no errors: the server answered every call); a slot
    that is not scored keeps the reason and the server's raw answer."""
    answers = {e.response["choices"][0]["message"]["content"] or "" for e in tap.completions()}
    scores = list(JudgeScore.objects.filter(run=run))
    statuses = Counter(s.status for s in scores)
    assert statuses.keys() <= {"scored", "unparsed", "truncated"}, statuses
    assert (run.n_scored, run.n_unparsed, run.n_truncated, run.n_error) == (
        statuses["scored"], statuses["unparsed"], statuses["truncated"], 0)
    for s in scores:
        if s.status != "scored":
            assert why_not_scored(s), (s.criterion, s.raw_text, s.detail)
            assert s.value is None and s.score is None
        assert s.raw_text.split("\n\n-----\n\n")[0] in answers or not s.raw_text


@pytest.mark.parametrize("preset,method,options", GENERATE, ids=[f"{p}-{m}" for p, m, _ in GENERATE])
def test_generate_methods_run_through_llamacpp(celery_worker_session, make_study, make_judge, tap,
                                               preset, method, options):
    study = study_for(make_study, preset)
    if method == "escalation":
        make_judge("aqua-expert", provider="llamacpp", endpoint=tap.base_url, model=MODEL_NAME, method="label",
                   price_in_per_m=PRICE_IN, price_out_per_m=PRICE_OUT)
    run = run_through(tap, make_judge, study, method, options)
    assert run.status == "done", run.error
    assert_each_slot_once(run)
    assert_usage_is_the_servers(run, tap)
    assert_unparsed_say_why(run, tap)
    if method in CALLS:
        assert len(tap.completions()) == CALLS[method](run)
    # the requests went out as generate-mode chat completions to the model named in the judge
    assert all(e.path.endswith("/chat/completions") and e.request["model"] == MODEL_NAME
               and e.request["max_tokens"] == 48 for e in tap.completions())


def expected_score(top_logprobs: list[dict], lo: int, hi: int) -> float | None:
    """G-Eval's expectation computed here from the server's answer (" 3" and "3" are one score)."""
    probs: Counter = Counter()
    for t in top_logprobs:
        tok = t["token"].strip()
        if tok.isdigit() and lo <= int(tok) <= hi:
            probs[int(tok)] += math.exp(t["logprob"])
    mass = sum(probs.values())
    return sum(k * p for k, p in probs.items()) / mass if mass else None


def test_geval_reads_the_servers_logprobs(celery_worker_session, make_study, make_judge, tap):
    """G-Eval asks for one token with its top logprobs; each scored slot's value is the expectation
    over the score tokens among the logprobs the server returned."""
    study = study_for(make_study, "feedback-000")
    run = run_through(tap, make_judge, study, "geval", {}, mode="logprobs")
    assert run.status == "done", run.error
    assert_each_slot_once(run)
    assert_usage_is_the_servers(run, tap)
    served = tap.completions()
    assert len(served) == run.n_expected
    assert all(e.request["logprobs"] is True and e.request["top_logprobs"] == 20 and e.request["max_tokens"] == 1
               for e in served)
    from_server = sorted(round(v, 6) for e in served
                         if (v := expected_score(e.response["choices"][0]["logprobs"]["content"][0]["top_logprobs"],
                                                 1, 5)) is not None)
    scored = JudgeScore.objects.filter(run=run, status="scored")
    assert sorted(round(s.value, 6) for s in scored) == from_server
    assert scored.count() == run.n_scored > 0
    unparsed = JudgeScore.objects.filter(run=run, status="unparsed")
    assert all(s.detail.get("parse") for s in unparsed)
    assert run.n_scored + run.n_unparsed == run.n_expected and unparsed.count() == run.n_unparsed


# The methods whose schema decides whether an answer is valid (ranking and best_worst schemas cannot
# say "each number once" or "best is not worst": bench structured_parse_rate measures those).
STRUCTURED = [("feedback-000", "all_in_one", {}), ("rrgen-001", "per_criterion", {}),
              ("fulltext-004", "all_in_one", {}), ("aqua-003", "label", {}), ("aqua-003", "legacy", {}),
              ("compare-pairwise", "pairwise", {"key": "preference"})]


@pytest.mark.parametrize("preset,method,options", STRUCTURED, ids=[f"{p}-{m}" for p, m, _ in STRUCTURED])
def test_structured_output_makes_every_answer_readable(celery_worker_session, make_study, make_judge, tap,
                                                       preset, method, options):
    """With structured_output the server's grammar holds even a random model to the rubric's schema:
    every answer is valid JSON for the schema and every slot is read (scored; a pair whose two orders
    disagree is read and marked inconsistent)."""
    import jsonschema

    study = study_for(make_study, preset)
    run = run_through(tap, make_judge, study, method, options, structured_output=True, max_tokens=512)
    assert run.status == "done", run.error
    assert_each_slot_once(run)
    assert_usage_is_the_servers(run, tap)
    for e in tap.completions():
        sent = e.request["response_format"]
        assert sent["type"] == "json_object"
        answer = json.loads(e.response["choices"][0]["message"]["content"])
        jsonschema.validate(answer, sent["schema"])  # the rubric's scales, sent as enums (judges/providers/llamacpp.py)
        assert e.response["choices"][0]["finish_reason"] == "stop"
    scores = JudgeScore.objects.filter(run=run)
    unread = [s for s in scores if s.status != "scored" and s.detail.get("method_status") != "inconsistent"]
    assert not unread, [(s.criterion, s.status, why_not_scored(s)) for s in unread[:3]]
    assert run.n_truncated == run.n_error == 0 and run.n_scored + run.n_unparsed == run.n_expected
