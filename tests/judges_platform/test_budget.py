"""Run estimates, the money cap (pause, then resume when it is raised) and the per-judge rate limits
shared through Redis, with the real worker (thread) and the fake OpenAI-compatible server."""

from __future__ import annotations

import io
import uuid

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db.models import Sum

from judges.models import JudgeRun, JudgeScore
from judges.ratelimit import SharedRateLimiter
from judges.services.estimate import run_estimate
from judges.services.runs import judge_run_start

from .conftest import wait_for, wait_run_ends
from .test_runs_worker import assert_each_slot_once, one_output_items

pytestmark = pytest.mark.django_db(transaction=True)


def word_tokenizer(path) -> str:
    """A tokenizer.json that counts words, as the fake server counts its usage."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    tok.save(str(path))
    return str(path)


def test_the_estimate_counts_the_calls_and_with_a_tokenizer_the_tokens_the_server_reports(
        celery_worker_session, make_study, make_judge, fake_server, tmp_path):
    from judges.tokens import MESSAGE_OVERHEAD

    study = make_study("rrgen-001", items_text=one_output_items(6))
    judge = make_judge("estimated", endpoint=fake_server.base_url,
                       method_options={"tokenizer": word_tokenizer(tmp_path / "tokenizer.json")})
    run = judge_run_start(study=study, judge=judge)
    est = run.estimate
    wait_run_ends(run)
    stats = fake_server.stats()
    assert run.status == "done"
    assert est["tokens_exact"] and "tokenizer" in est["tokenizer"]
    assert est["calls"] == stats.completion_requests == 30
    # per_criterion sends one user message per call; the count adds the per-message overhead to each
    assert est["input_tokens"] == stats.prompt_tokens + MESSAGE_OVERHEAD * est["calls"]
    assert est["max_output_tokens"] == 30 * 128
    assert run.tokens_in == stats.prompt_tokens and run.cost_usd <= est["max_cost_usd"]
    assert est["input_cost_usd"] == pytest.approx(est["input_tokens"] * 1.0 / 1e6)

    config = {**run.config, "method_options": {**run.config["method_options"], "tokenizer": ""}}
    approx = run_estimate(study=study, config=config)
    assert not approx["tokens_exact"] and approx["calls"] == 30
    for label, e in (("tokenizer", est), ("approximation", approx)):
        print(f"estimate ({label}): {e['calls']} calls, {e['input_tokens']} input tokens, at most "
              f"{e['max_output_tokens']} output tokens, at most ${e['max_cost_usd']:.6f} (input ${e['input_cost_usd']:.6f})")
    print(f"actual: {stats.completion_requests} calls, {run.tokens_in} input tokens, {run.tokens_out} output tokens, "
          f"${run.cost_usd:.6f}")


def test_dry_run_prints_the_estimate_and_starts_nothing(make_study, make_judge):
    study = make_study("rrgen-001", items_text=one_output_items(3))
    make_judge("dry", method_options={"rpm": 6})
    out = io.StringIO()
    call_command("run_judge", "--study", study.slug, "--judge", "dry", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "calls: 15" in text
    assert "approximation" in text  # no tokenizer here: it says the count is approximate
    assert "time at the judge's limits: at least 150 s" in text  # 15 calls at 6 per minute
    assert not JudgeRun.objects.exists()


def test_a_run_pauses_before_crossing_its_cap_and_resumes_when_it_is_raised(
        celery_worker_session, make_study, make_judge, fake_server, admin_user, api_for, researcher):
    study = make_study("rrgen-001", items_text=one_output_items(12), researchers=[researcher])
    judge = make_judge("capped", endpoint=fake_server.base_url, method_options={"chunk_size": 2})
    full = judge_run_start(study=study, judge=judge, max_cost_usd=100.0)
    wait_run_ends(full)
    per_chunk = full.estimate["max_cost_usd"] / 6  # 6 chunks of 2 outputs x 5 criteria
    JudgeRun.objects.filter(pk=full.pk).delete()

    cap = 2.5 * per_chunk
    run = judge_run_start(study=study, judge=judge, max_cost_usd=cap)
    wait_for(lambda: JudgeRun.objects.get(pk=run.pk).status == "paused", 60, what="the run to pause")
    wait_for(lambda: JudgeRun.objects.get(pk=run.pk).cost_reserved_usd < 1e-12, 30, what="chunks under way to end")
    run.refresh_from_db()
    assert "cap" in run.pause_reason and "Raise the cap" in run.pause_reason
    done = JudgeScore.objects.filter(run=run).count()
    assert 0 < done < run.n_expected
    spent = JudgeScore.objects.filter(run=run).aggregate(s=Sum("cost_usd"))["s"]
    assert spent <= cap

    # only admins may raise it: the study's researcher reads the run, and cannot
    assert api_for(researcher).post(f"/api/judges/runs/{run.pk}/cap/", {"max_cost_usd": 50}, format="json") \
        .status_code == 404
    resp = api_for(admin_user).post(f"/api/judges/runs/{run.pk}/cap/", {"max_cost_usd": 50}, format="json")
    assert resp.status_code == 200, resp.content
    wait_run_ends(run)
    assert run.status == "done" and run.cost_cap_usd == 50
    assert_each_slot_once(run)


def test_limiters_of_one_judge_share_one_quota_and_a_429_holds_them_all():
    name = f"rl-{uuid.uuid4().hex[:8]}"
    a = SharedRateLimiter(name, redis_url=settings.REDIS_URL, rpm=5, tpm=1000)
    b = SharedRateLimiter(name, redis_url=settings.REDIS_URL, rpm=5, tpm=1000)  # another worker
    taken = [lim._take(lim.rpm, 1) == 0.0 for lim in (a, b, a, b, a, b, a)]
    assert taken == [True] * 5 + [False] * 2
    assert b._take(b.tpm, 900) == 0.0 and a._take(a.tpm, 200) > 0  # tokens too: 1100 > 1000
    other = SharedRateLimiter(f"{name}-x", redis_url=settings.REDIS_URL, rpm=5)
    assert other._take(other.rpm, 1) == 0.0  # each judge has its own quota
    a.throttled(3.0)
    assert a.rate_limited == 1 and 0 < b._blocked_for() <= 3.0


def test_429s_are_retried_and_counted_on_the_run(celery_worker_session, make_study, make_judge):
    from judges.fakeserver import running_fake_server

    with running_fake_server(fail_429_first=3, retry_after="0") as server:
        study = make_study("rrgen-001", items_text=one_output_items(2))
        judge = make_judge("limited", endpoint=server.base_url, backend_options={"max_retries": 5},
                           method_options={"rpm": 600, "tpm": 1_000_000})
        run = judge_run_start(study=study, judge=judge)
        wait_run_ends(run)
    assert run.status == "done" and run.n_scored == 10
    assert run.n_rate_limited == 3


def test_the_run_form_shows_the_estimate_to_admins_only_and_takes_a_cap(make_study, make_judge, client_for,
                                                                        admin_user, researcher):
    study = make_study("rrgen-001", items_text=one_output_items(3), researchers=[researcher])
    judge = make_judge("form-judge")
    url = f"/judges/studies/{study.slug}/estimate/?judge={judge.pk}"
    admin = client_for(admin_user)
    page = admin.get(f"/judges/studies/{study.slug}/")
    assert 'name="max_cost_usd"' in page.content.decode() and "run-estimate" in page.content.decode()
    fragment = admin.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "calls: 15" in fragment and "at most $" in fragment
    assert client_for(researcher).get(url).status_code == 404

    resp = admin.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk, "max_cost_usd": "lots"}, follow=True)
    assert "the cap must be an amount of USD" in resp.content.decode()
    assert not JudgeRun.objects.exists()
    admin.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk, "max_cost_usd": "0.5"})
    run = JudgeRun.objects.get()
    assert run.cost_cap_usd == 0.5 and run.estimate["calls"] == 15
    assert client_for(researcher).post(f"/judges/runs/{run.pk}/cap/", {"max_cost_usd": "9"}).status_code == 404
    JudgeRun.objects.filter(pk=run.pk).update(status="paused", pause_reason="paused before crossing its cap")
    card = admin.get(f"/judges/runs/{run.pk}/progress/").content.decode()
    assert "paused before crossing its cap" in card and "Raise cap and resume" in card
    admin.post(f"/judges/runs/{run.pk}/cap/", {"max_cost_usd": "9"})
    run.refresh_from_db()
    assert run.cost_cap_usd == 9 and run.status in ("queued", "running") and run.pause_reason == ""


def test_a_local_models_estimate_counts_with_its_own_tokenizer_and_chat_template(make_study, make_judge, tmp_path):
    from transformers import AutoTokenizer

    from judges.services.estimate import RecordingBackend, _pending
    from judges.services.runs import judge_config_snapshot
    from tests.judges.tiny_model import build_tiny_llama

    path = build_tiny_llama(tmp_path / "tiny")
    study = make_study("rrgen-001", items_text=one_output_items(2))
    judge = make_judge("local", backend="transformers", model=str(path), endpoint="", price_in_per_m=0.0,
                       price_out_per_m=0.0)
    config = judge_config_snapshot(judge, study)
    est = run_estimate(study=study, config=config)
    assert est["tokens_exact"] and str(path) in est["tokenizer"] and "chat template" in est["tokenizer"]

    # the same prompts, rendered here as text through the chat template and then tokenised: the estimate is that sum
    import asyncio

    from annotation.models import Item
    from judges.services import engine

    recorder = RecordingBackend()
    items = list(Item.objects.filter(study=study).prefetch_related("outputs").order_by("id"))
    payloads, pending = _pending(config, study.rubric, engine.output_criteria(config, study.rubric), items)
    asyncio.run(engine.judge_items(config, study.rubric, payloads, pending, None, backend_for=lambda c: recorder))
    tok = AutoTokenizer.from_pretrained(str(path))
    texts = [tok.apply_chat_template([dict(m) for m in r.messages], tokenize=False, add_generation_prompt=True)
             for r in recorder.requests]
    counted = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
    assert counted > 20 * len(texts)  # whole prompts, not the two keys of an encoding
    assert est["calls"] == len(recorder.requests) == 10
    assert est["input_tokens"] == counted

