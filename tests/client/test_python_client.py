"""The Python client (clients/python) against a live server: token auth, real HTTP, a real Celery worker."""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # `datasets` reads local files only
import datasets  # noqa: E402

from annotation.models import Rating
from annotation.reports.comparisons import comparative_answers
from annotation.simulation.study import simulated_study_create
from concord_client import ConcordError, ReleaseChecksumError
from judges.models import JudgeScore
from rubrics.loader import PRESETS_DIR
from tests.conftest import DEMO_DIR

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_a_study_upload_items_add_members_and_open_it(concord, admin_user, annotator, researcher,
                                                            preset_version, tmp_path):
    installed = preset_version["rrgen-001"]  # the client picks a preset among the stored rubrics
    client = concord(admin_user)
    study = client.create_study("Client study", preset="rrgen-001", raters_per_item=2)
    assert study["status"] == "draft" and study["rubric_version"] == installed.pk
    assert client.upload_items(study["slug"], DEMO_DIR / "rrgen-001.jsonl") == 5
    assert client.add_members(study["slug"], [annotator.username]) == [annotator.username]
    client.add_members(study["slug"], [researcher.username], role="researcher")
    assert client.set_status(study["slug"], "open")["status"] == "open"
    assert client.progress(study["slug"])["items"] == 5
    assert study["slug"] in {s["slug"] for s in client.studies()}
    # a researcher's token lists only the studies the researcher belongs to
    assert [s["slug"] for s in concord(researcher).studies()] == [study["slug"]]

    rubric = tmp_path / "my-rubric.yaml"
    rubric.write_text((PRESETS_DIR / "aqua-003.yaml").read_text().replace("slug: aqua-003", "slug: my-aqua"))
    own = client.create_study("From a file", rubric_file=rubric)
    assert client.rubric_version("my-aqua")["id"] == own["rubric_version"]


def test_errors_raise_with_the_servers_message(concord, admin_user, researcher, preset_version, tmp_path):
    preset_version["aqua-003"]  # stored: the client looks the preset up among the rubrics
    client = concord(admin_user)
    slug = client.create_study("Errors", preset="aqua-003")["slug"]
    with pytest.raises(ConcordError) as bad_items:
        client.upload_items(slug, '{"id": "a", "outputs": []}\nnot json\n', filename="items.jsonl")
    assert bad_items.value.status == 400 and "nothing was imported" in bad_items.value.detail
    assert {e["line"] for e in bad_items.value.errors} >= {2}
    assert "line 2" in str(bad_items.value)
    with pytest.raises(ConcordError, match="already exists"):
        client.create_study("Errors", preset="aqua-003")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nslug: x\ncriteria: 3\n")
    with pytest.raises(ConcordError) as bad_rubric:
        client.load_rubric(broken)
    assert bad_rubric.value.detail == "invalid rubric" and bad_rubric.value.errors
    # the researcher may not write, nor read a study it is not a member of
    with pytest.raises(ConcordError) as forbidden:
        concord(researcher).load_rubric(broken)
    assert forbidden.value.status == 403 and forbidden.value.detail == "only admins add rubrics"
    with pytest.raises(ConcordError) as hidden:
        concord(researcher).ratings(slug)
    assert hidden.value.status == 404


def test_ratings_as_a_typed_dataframe(concord, admin_user):
    sim = simulated_study_create(preset="rrgen-001", slug="client-ratings", n_items=4, n_raters=2, seed=3)
    ratings = concord(admin_user).ratings("client-ratings")
    stored = Rating.objects.filter(assignment__study=sim.study).count()
    assert len(ratings) == stored > 0
    assert pd.api.types.is_string_dtype(ratings["item"]) and pd.api.types.is_string_dtype(ratings["system"])
    assert pd.api.types.is_integer_dtype(ratings["output"]) and ratings["output"].dtype.na_value is pd.NA
    assert ratings["ignored"].dtype == pd.BooleanDtype()
    assert str(ratings["submitted_at"].dtype).startswith("datetime64") and ratings["submitted_at"].dt.tz is not None
    fluency = ratings[ratings["criterion"] == "fluency"]
    assert fluency["score"].between(1, 7).all()
    assert set(ratings["rater"]) == {u.username for u in sim.raters}


def test_a_judge_run_with_progress_and_its_scores(concord, admin_user, celery_worker_session, make_judge,
                                                 fake_server):
    simulated_study_create(preset="rrgen-001", slug="client-judge", n_items=3, n_raters=2, seed=1)
    judge = make_judge("client-judge-1", endpoint=fake_server.base_url)
    seen: list[dict] = []
    client = concord(admin_user)
    run = client.run_judge("client-judge", judge.name, progress=seen.append, poll_s=0.1, timeout_s=120)
    assert run["status"] == "done" and run["n_scored"] == run["n_expected"] == 3 * 3 * 5
    assert seen[-1]["status"] == "done" and seen[-1]["progress"]["done"] == run["n_expected"]
    assert all(a["progress"]["done"] <= b["progress"]["done"] for a, b in zip(seen, seen[1:]))

    scores = client.judge_scores("client-judge")
    assert len(scores) == JudgeScore.objects.filter(run_id=run["id"]).count() == run["n_expected"]
    assert set(scores["judge"]) == {judge.name} and set(scores["run"]) == {run["id"]}
    assert scores["run"].dtype == pd.Int64Dtype() and scores["score"].dtype == "float64"
    decision = scores[scores["criterion"] == "decision"]
    assert set(decision["value"]) <= {'"ACCEPT"', '"REJECT"'}
    with pytest.raises(ConcordError, match="already has a run in progress|no such judge") as err:
        client.start_judge_run("client-judge", "no-such-judge")
    assert err.value.status == 400


def test_comparative_answers_as_a_dataframe(concord, admin_user):
    sim = simulated_study_create(preset="compare-pairwise", slug="client-compare", n_items=4, n_raters=2, seed=2)
    answers = concord(admin_user).comparisons("client-compare")
    expected = comparative_answers(sim.study)
    assert len(answers) == len(expected) > 0
    pairwise = answers[answers["kind"] == "pairwise"]
    assert (pairwise["shown"].map(len) == 2).all()
    assert pairwise.apply(lambda r: r["winner"] in (*r["shown"], "tie"), axis=1).all()


def test_the_report_as_a_dict(concord, admin_user):
    simulated_study_create(preset="aqua-003", slug="client-report", n_items=5, n_raters=3, seed=4)
    report = concord(admin_user).report("client-report")
    assert isinstance(report, dict)
    label = report["agreement"]["label"]
    assert label["n_raters"] == 3, label.keys()


def test_a_large_studys_report_is_waited_for_while_a_worker_computes_it(concord, admin_user, celery_worker_session,
                                                                        settings):
    """Past REPORT_BACKGROUND_RATINGS the API answers 202 with Retry-After until the worker is done;
    `report()` waits and returns the report, the same as the one computed in turn."""
    from annotation.reports.study import study_report

    settings.REPORT_BACKGROUND_RATINGS = 1
    study = simulated_study_create(preset="aqua-003", slug="client-report-bg", n_items=5, n_raters=3, seed=4).study
    client = concord(admin_user)
    first = client._http.get("/api/studies/client-report-bg/report/")
    assert first.status_code == 202 and int(first.headers["Retry-After"]) >= 2
    report = client.report("client-report-bg", wait_s=120)
    in_turn = json.loads(json.dumps(study_report(study)["agreement"], default=str))
    assert {k: {f: v for f, v in a.items() if f != "accepted"} for k, a in report["agreement"].items()} == in_turn


def test_a_release_downloaded_with_its_checksum_checked(concord, admin_user, celery_worker_session, tmp_path,
                                                       settings):
    simulated_study_create(preset="aqua-003", slug="client-release", n_items=4, n_raters=2, seed=5)
    client = concord(admin_user)
    made = client.create_release("client-release", "1.0.0", ["parquet", "csv", "hf"], changelog="first",
                                 license="cc-by-4.0")
    assert {r["format"] for r in made} == {"parquet", "csv", "hf"} and {r["license"] for r in made} == {"cc-by-4.0"}
    ready = client.wait_for_release("client-release", "1.0.0", "parquet", timeout_s=120)
    path = client.download_release("client-release", "1.0.0", "parquet", tmp_path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == ready["sha256"]
    assert len(pd.read_parquet(path)) == len(client.ratings("client-release"))
    with pytest.raises(ConcordError, match="immutable|already"):
        client.create_release("client-release", "1.0.0", ["parquet"])

    client.wait_for_release("client-release", "1.0.0", "hf", timeout_s=120)
    folder = client.download_hf_dataset("client-release", "1.0.0", tmp_path / "hf")
    train = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))["train"]
    assert train.num_rows == len(pd.read_parquet(path)) and "license: cc-by-4.0" in (folder / "README.md").read_text()

    client.wait_for_release("client-release", "1.0.0", "csv", timeout_s=120)
    stored = next((settings.MEDIA_ROOT / "releases").rglob("*.csv"))
    stored.write_bytes(stored.read_bytes() + b"tampered\n")  # the server's file no longer matches its record
    with pytest.raises(ReleaseChecksumError):
        client.download_release("client-release", "1.0.0", "csv", tmp_path)
    assert not list(tmp_path.glob("*.csv"))


def test_trajectories_written_and_read_with_their_steps(concord, admin_user, tmp_path):
    """Issue 56 §4: the client writes trajectories in items (as dicts) and reads them back parsed, with
    the server's step keys; per-step ratings split into criterion and step."""
    from concord_client import trajectory_row, with_steps

    from annotation.simulation.agent import AGENT_RUBRIC, agent_item
    from annotation.simulation.agent_study import agent_study_create

    client = concord(admin_user)
    rubric = tmp_path / "agent.json"
    rubric.write_text(json.dumps(AGENT_RUBRIC))
    slug = client.create_study("Agents via the client", rubric_file=rubric)["slug"]
    source = agent_item(0, 1)["outputs"][0]["content"]
    assert client.upload_items(slug, [trajectory_row("t-1", "Trains?", {"bot": source})]) == 1
    (row,) = client.trajectories(slug).to_dict("records")
    assert row["trajectory"]["trace_id"] == source["trace_id"] and row["system"] == "bot"
    calls = [s for s in row["steps"] if s["kind"] == "tool_call"]
    assert calls[0]["step"] == "m2.t0" and calls[0]["tool_call_id"] == source["messages"][2]["tool_calls"][0]["id"]

    rated = agent_study_create(slug="client-agents", admin=admin_user, n_items=2, n_raters=2).study
    ratings = with_steps(client.ratings(rated.slug))
    per_step = ratings[ratings["step"] != ""]
    assert {"call_needed", "turn_helpful"} <= set(per_step["criterion_key"]) <= {"call_needed", "turn_helpful",
                                                                               "unsupported"}
    highlights = per_step[per_step["criterion_key"] == "unsupported"]  # highlights inside a turn, where drawn
    assert (highlights["criterion_kind"] == "spans").all() and highlights["spans"].notna().all()
    assert per_step["step"].str.match(r"^m\d+(\.t\d+)?$").all()
    assert (ratings.loc[ratings["step"] == "", "criterion"] == ratings.loc[ratings["step"] == "", "criterion_key"]).all()
