"""Fixtures for the judges platform: judge configs pointing at the fake server, run waiting."""

from __future__ import annotations

import time

import pytest

from judges.fakeserver import running_fake_server


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Run files of each test in its own folder (run ids restart with every test database)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def fake_server():
    with running_fake_server() as server:
        yield server


@pytest.fixture
def make_judge(db):
    from judges.services.configs import judge_config_save

    def _make(name: str = "fake-judge", *, endpoint: str = "http://127.0.0.1:9/v1", **fields):
        data = {"name": name, "backend": "openai", "model": "fake-judge", "endpoint": endpoint,
                "method": "per_criterion", "sampling": {"temperature": 0, "max_tokens": 128},
                "concurrency": 4, "price_in_per_m": 1.0, "price_out_per_m": 2.0,
                "backend_options": {"max_retries": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.05,
                                    "timeout_s": 10},
                "method_options": {"chunk_size": 4, "task_retry_backoff_s": 0.05, "use_cache": False}}
        if fields.get("backend") == "transformers":
            data["backend_options"] = {}  # the HTTP client's options do not apply
        for key in ("backend_options", "method_options", "sampling"):
            if key in fields:
                data[key] = {**data[key], **fields.pop(key)}
        data.update(fields)
        judge, _ = judge_config_save(data=data)
        return judge

    return _make


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_run_ends(run, timeout: float = 60.0):
    from judges.models import JudgeRun

    def ended():
        run.refresh_from_db()
        return run.status not in JudgeRun.ACTIVE

    wait_for(ended, timeout, what=f"run {run.pk} to end (status {run.status})")
    return run


@pytest.fixture
def make_run(db):
    """A run written directly (no worker): `values` maps (item id, output position, criterion) to
    a value, or to (value, status, doubt)."""
    from django.utils import timezone

    from annotation.models import Output
    from judges.models import JudgeRun, JudgeScore
    from judges.services.engine import numeric_score
    from judges.services.runs import judge_config_snapshot, judge_run_refresh_totals

    def _make(study, judge, values: dict, *, status: str = "done", criteria=None, cost: float = 0.001):
        crits = {c["key"]: c for c in study.rubric["criteria"]}
        keys = criteria or sorted({k[2] for k in values})
        outputs = {(o.item.external_id, o.position): o
                   for o in Output.objects.filter(item__study=study).select_related("item")}
        run = JudgeRun.objects.create(study=study, judge=judge, config=judge_config_snapshot(judge), criteria=keys,
                                      status=status, n_outputs=len(outputs), n_expected=len(outputs) * len(keys),
                                      started_at=timezone.now(), finished_at=timezone.now())
        rows = []
        for (ext, pos, crit), v in values.items():
            value, st, doubt = v if isinstance(v, tuple) else (v, "scored", {})
            out = outputs[(ext, pos)]
            rows.append(JudgeScore(run=run, item=out.item, output=out, criterion=crit, value=value, status=st,
                                   score=numeric_score(crits.get(crit), value) if st == "scored" else None,
                                   raw_text=f"raw answer {value}", tokens_in=100, tokens_out=10, cost_usd=cost,
                                   doubt=doubt))
        JudgeScore.objects.bulk_create(rows)
        return judge_run_refresh_totals(run=run)

    return _make
