"""Judge pages over HTTP: what admins and researchers see and may do; annotators and outsiders get 404."""

from __future__ import annotations

import pytest
from sklearn.metrics import accuracy_score, f1_score

from annotation.models import Item
from judges.models import JudgeConfig, JudgeRun

AQUA_GOLD = {"aq-001": "TP", "aq-002": "TP", "aq-003": "FP3", "aq-004": "FP2", "aq-005": "FP1", "aq-006": "TP"}
# 4 of 6 right; one unparsed (counts as "Error"), one wrong
AQUA_PRED = {"aq-001": "TP", "aq-002": ("", "unparsed", {}), "aq-003": "FP3", "aq-004": "FP2", "aq-005": "FP2",
             "aq-006": "TP"}


@pytest.fixture
def setup(make_study, make_judge, make_run, annotator, researcher):
    study = make_study("aqua-003", annotators=[annotator], researchers=[researcher])
    judge = make_judge("aqua-fake", method="label")
    run = make_run(study, judge, {(k, 0, "label"): v for k, v in AQUA_PRED.items()})
    return study, judge, run


def urls(study, run):
    return {
        "list": "/judges/",
        "study": f"/judges/studies/{study.slug}/",
        "gold": f"/judges/studies/{study.slug}/gold/",
        "doubt": f"/judges/studies/{study.slug}/doubt/",
        "progress": f"/judges/runs/{run.pk}/progress/",
        "file": f"/judges/runs/{run.pk}/files/labeled.csv",
    }


def test_annotators_and_outsiders_reach_nothing(setup, client_for, annotator, outsider):
    study, judge, run = setup
    for user in (annotator, outsider):
        c = client_for(user)
        for name, url in urls(study, run).items():
            assert c.get(url).status_code == 404, (user.username, name)
        for url in (f"/judges/studies/{study.slug}/run/", f"/judges/runs/{run.pk}/cancel/",
                    f"/judges/runs/{run.pk}/resume/", f"/judges/studies/{study.slug}/doubt/", "/judges/load/"):
            assert c.post(url, {"judge": judge.pk, "target": study.pk, "text": "name: x"}).status_code == 404, url
    assert JudgeRun.objects.count() == 1 and JudgeConfig.objects.count() == 1


def test_anonymous_is_sent_to_login(setup, client):
    study, _, run = setup
    for url in urls(study, run).values():
        resp = client.get(url)
        assert resp.status_code == 302 and "/login/" in resp["Location"]


def test_researcher_reads_but_cannot_act(setup, client_for, researcher):
    study, judge, run = setup
    c = client_for(researcher)
    assert c.get("/judges/").status_code == 404  # configurations are for admins
    page = c.get(f"/judges/studies/{study.slug}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"Run {run.pk}: aqua-fake" in html and "read only" in html
    assert "Run judge" not in html and "Send to humans" not in html
    assert c.get(f"/judges/runs/{run.pk}/files/report.txt").status_code == 200
    assert c.get(f"/judges/studies/{study.slug}/gold/").status_code == 200
    assert c.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk}).status_code == 404
    run.status = "running"
    run.save(update_fields=["status"])
    assert c.post(f"/judges/runs/{run.pk}/cancel/").status_code == 404
    run.refresh_from_db()
    assert run.status == "running" and JudgeRun.objects.count() == 1


def test_admin_loads_a_judge_from_yaml_and_a_bad_file_is_refused_whole(admin_user, client_for):
    c = client_for(admin_user)
    ok = c.post("/judges/load/", {"text": "name: big\nbackend: openai\nmodel: m\nendpoint: http://127.0.0.1:1/v1\n"})
    assert ok.status_code == 302 and JudgeConfig.objects.filter(name="big").exists()
    bad = c.post("/judges/load/", {"text": "judges:\n  - {name: x1, backend: openai, model: m, endpoint: 'http://h/v1'}\n"
                                           "  - {name: x2, backend: openai, model: m, api_key: sk-123}\n"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "judges[1].api_key" in html and "judges[1].endpoint" in html
    assert not JudgeConfig.objects.filter(name__in=["x1", "x2"]).exists()
    listing = c.get("/judges/").content.decode()
    assert "big" in listing


def test_admin_starts_cancels_and_resumes_a_run(setup, client_for, admin_user, django_capture_on_commit_callbacks):
    study, judge, _ = setup
    c = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resp = c.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk})
    assert resp.status_code == 302 and len(callbacks) == 1  # chunks are enqueued only after the commit
    run = JudgeRun.objects.filter(status="queued").get()
    assert run.n_expected == Item.objects.filter(study=study).count()

    progress = c.get(f"/judges/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true")
    assert progress.status_code == 200 and 'hx-trigger="every 1s"' in progress.content.decode()

    again = c.post(f"/judges/studies/{study.slug}/run/", {"judge": judge.pk}, follow=True)
    assert "already has a run in progress" in again.content.decode()

    cancelled = c.post(f"/judges/runs/{run.pk}/cancel/", HTTP_HX_REQUEST="true")
    assert cancelled.status_code == 200 and "Resume" in cancelled.content.decode()
    assert "every 1s" not in cancelled.content.decode()  # polling stops
    run.refresh_from_db()
    assert run.status == "cancelled"

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resumed = c.post(f"/judges/runs/{run.pk}/resume/", HTTP_HX_REQUEST="true")
    assert resumed.status_code == 200 and len(callbacks) == 1
    run.refresh_from_db()
    assert run.status == "queued"
    assert c.post(f"/judges/runs/{run.pk}/resume/", HTTP_HX_REQUEST="true").status_code == 409


def test_run_files_download(setup, client_for, admin_user):
    _, _, run = setup
    c = client_for(admin_user)
    resp = c.get(f"/judges/runs/{run.pk}/files/labeled.csv")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/csv")
    body = b"".join(resp.streaming_content).decode()
    assert body.splitlines()[0].startswith("id,item,output,system,criterion,value")
    assert len(body.splitlines()) == 1 + len(AQUA_PRED)
    errors = b"".join(c.get(f"/judges/runs/{run.pk}/files/errors.txt").streaming_content).decode()
    assert "aq-002" in errors and "aq-005" in errors and "aq-001" not in errors
    assert c.get(f"/judges/runs/{run.pk}/files/secrets.txt").status_code == 404


def _expected(gold: dict, pred: dict) -> tuple[float, float]:
    ids = sorted(gold)
    p = [pred[i] if isinstance(pred[i], str) else "Error" for i in ids]
    g = [gold[i] for i in ids]
    # macro F1 over the rubric's labels (aqua-003's four); a failure is wrong for its gold class
    return accuracy_score(g, p), f1_score(g, p, average="macro", labels=["TP", "FP3", "FP2", "FP1"], zero_division=0)


def test_gold_evaluation_from_items_matches_sklearn(setup, client_for, researcher):
    study, _, run = setup
    html = client_for(researcher).get(f"/judges/studies/{study.slug}/gold/").content.decode()
    acc, macro = _expected(AQUA_GOLD, AQUA_PRED)
    assert f"<td>{acc:.3f}</td><td>{macro:.3f}</td>" in html
    # binary view, TP against the rest: TP predicted for aq-001, aq-006 (both TP), aq-002 unparsed
    g = [AQUA_GOLD[i] == "TP" for i in sorted(AQUA_GOLD)]
    p = [isinstance(AQUA_PRED[i], str) and AQUA_PRED[i] == "TP" for i in sorted(AQUA_GOLD)]
    assert f"<td>{accuracy_score(g, p):.3f}</td><td>{f1_score(g, p):.3f}</td>" in html
    # cost per 10K: $0.001 per output
    assert "<td>$10.00</td>" in html


def test_gold_evaluation_from_an_uploaded_csv_and_several_runs(setup, make_run, make_judge, client_for, admin_user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    study, _, run = setup
    other = make_run(study, make_judge("aqua-other", method="label"),
                     {(k, 0, "label"): "TP" for k in AQUA_GOLD})
    gold = {"aq-001": "TP", "aq-003": "TP", "aq-005": "FP1"}
    upload = SimpleUploadedFile("gold.csv", ("id,label\n" + "".join(f"{k},{v}\n" for k, v in gold.items())).encode())
    resp = client_for(admin_user).post(f"/judges/studies/{study.slug}/gold/", {"gold": upload, "criterion": "label"})
    html = resp.content.decode()
    assert resp.status_code == 200 and "uploaded file" in html
    for r, pred in ((run, AQUA_PRED), (other, {k: "TP" for k in AQUA_GOLD})):
        acc, macro = _expected(gold, {k: pred[k] for k in gold})
        assert f"{r.pk}: {r.name}" in html and f"<td>{acc:.3f}</td><td>{macro:.3f}</td>" in html


def test_a_bad_gold_csv_names_the_row_and_column(setup, client_for, admin_user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    study, _, _ = setup
    upload = SimpleUploadedFile("gold.csv", b"id,label\naq-001,TP\naq-001,FP1\n")
    resp = client_for(admin_user).post(f"/judges/studies/{study.slug}/gold/", {"gold": upload})
    assert resp.status_code == 400
    assert "row 3" in resp.content.decode() and "duplicate id" in resp.content.decode()


def test_a_done_run_with_failed_slots_offers_to_retry_them(setup, client_for, admin_user,
                                                           django_capture_on_commit_callbacks):
    from judges.models import JudgeScore
    from judges.services.runs import judge_run_refresh_totals

    study, judge, run = setup
    assert run.status == "done"
    c = client_for(admin_user)
    assert "failed</button>" not in c.get(f"/judges/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true").content.decode()
    failed = JudgeScore.objects.filter(run=run).first()
    JudgeScore.objects.filter(pk=failed.pk).update(status="error", value=None, score=None)
    judge_run_refresh_totals(run=run)
    fragment = c.get(f"/judges/runs/{run.pk}/progress/", HTTP_HX_REQUEST="true").content.decode()
    assert "Retry 1 failed" in fragment and f"/judges/runs/{run.pk}/resume/" in fragment
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resumed = c.post(f"/judges/runs/{run.pk}/resume/", HTTP_HX_REQUEST="true")
    assert resumed.status_code == 200 and len(callbacks) == 1
    assert not JudgeScore.objects.filter(run=run, status="error").exists()
