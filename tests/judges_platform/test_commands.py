"""load_judge and run_judge, through call_command."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from judges.models import JudgeConfig, JudgeRun


def test_load_judge_adds_then_updates(db, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n"
                    "  - {name: small, backend: openai, model: m1, endpoint: 'http://127.0.0.1:1/v1', method: label}\n"
                    "  - {name: big, backend: openai, model: m2, endpoint: 'http://127.0.0.1:1/v1', method: label}\n")
    out = io.StringIO()
    call_command("load_judge", str(path), stdout=out)
    assert "added judge small" in out.getvalue() and "added judge big" in out.getvalue()
    path.write_text("name: small\nbackend: openai\nmodel: m3\nendpoint: http://127.0.0.1:1/v1\n")
    out = io.StringIO()
    call_command("load_judge", str(path), stdout=out)
    assert "updated judge small" in out.getvalue()
    assert JudgeConfig.objects.get(name="small").model == "m3"


def test_load_judge_refuses_a_bad_file_whole(db, tmp_path):
    path = tmp_path / "judges.yaml"
    path.write_text("judges:\n"
                    "  - {name: fine, backend: openai, model: m, endpoint: 'http://127.0.0.1:1/v1'}\n"
                    "  - {name: broken, backend: openai, model: m, endpoint: 'http://127.0.0.1:1/v1', api_key: sk-1}\n")
    with pytest.raises(CommandError) as exc:
        call_command("load_judge", str(path))
    assert "judges[1].api_key" in str(exc.value) and "nothing was saved" in str(exc.value)
    assert not JudgeConfig.objects.exists()


def test_run_judge_unknown_names(db, make_study):
    study = make_study("aqua-003")
    with pytest.raises(CommandError, match="no judge named"):
        call_command("run_judge", "--study", study.slug, "--judge", "nobody")
    with pytest.raises(CommandError, match="no study"):
        call_command("run_judge", "--study", "nowhere", "--judge", "nobody")


@pytest.mark.django_db(transaction=True)
def test_run_judge_wait_follows_the_run_to_the_end(celery_worker_session, make_study, make_judge, fake_server):
    study = make_study("aqua-003")
    make_judge("aqua-fake", endpoint=fake_server.base_url, method="label")
    out = io.StringIO()
    call_command("run_judge", "--study", study.slug, "--judge", "aqua-fake", "--wait", "--interval", "0.2",
                 "--timeout", "60", stdout=out)
    run = JudgeRun.objects.get()
    assert run.status == "done" and run.n_scored == run.n_expected > 0
    text = out.getvalue()
    assert f"run {run.pk}:" in text and "[done]" in text and f"{run.n_expected}/{run.n_expected}" in text
