"""The table of limits (config/limits.py), each tried over HTTP at its value and one past it: the first
is stored, the second refused with a message that names the field and the limit, nothing half-stored.
And every stored TextField is bounded: named in the table or given a max_length (issue 55 §1)."""

from __future__ import annotations

import json

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.urls import reverse

from annotation.models import Assignment, AuditEntry, DatasetRelease, Study
from config.limits import LIMITS, field_limits, limit
from judges.models import JudgeConfig
from tests.workspace.conftest import complete_answers, items_jsonl

pytestmark = pytest.mark.django_db
PROJECT_APPS = ("annotation", "judges", "rubrics")


def at_and_past(key: str):
    """(size, accepted) at the limit and one past it."""
    return [pytest.param(limit(key), True, id="at"), pytest.param(limit(key) + 1, False, id="past")]


def test_every_stored_text_field_is_bounded():
    bounded = field_limits()
    unbounded = [f"{m._meta.app_label}.{m.__name__}.{f.name}" for m in apps.get_models()
                 if m._meta.app_label in PROJECT_APPS for f in m._meta.get_fields()
                 if isinstance(f, models.TextField) and f"{m._meta.app_label}.{m.__name__}.{f.name}" not in bounded
                 and not f.max_length]
    assert unbounded == []
    named = [field for field in bounded if field.rsplit(".", 1)[0] not in
             {f"{m._meta.app_label}.{m.__name__}" for m in apps.get_models()}]
    assert named == []  # a limit never names a model that is not there


# ------------------------------------------------------------------ the rating loop (draft and submit)


@pytest.fixture
def codegen(make_study, annotator):
    """A study whose rubric takes a comment and reasoning."""
    return make_study("codegen-002", annotators=[annotator], items_text=items_jsonl(1, k=2))


@pytest.fixture
def rrgen(make_study, annotator):
    """A study whose rubric allows ignoring an item."""
    return make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1))


def _rate_url(api, study) -> str:
    token = api.post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]["token"]
    return f"/api/studies/{study.slug}/rate/{token}/"


def _refused(response, field: str, key: str) -> None:
    assert response.status_code == 400
    message = response.json()["errors"][field]
    assert f"at most {limit(key):,} characters" in message and message.split(":")[0].endswith(field.split("__")[-1])


@pytest.mark.parametrize("size, accepted", at_and_past("assignment.comment"))
def test_a_comment_is_bounded_at_submit(size, accepted, codegen, annotator, api_for):
    api = api_for(annotator)
    url = _rate_url(api, codegen)
    answers = complete_answers(codegen.rubric, 2, comment="c" * size)
    response = api.post(url + "submit/", {"answers": answers}, format="json")
    if accepted:
        assert response.status_code == 200 and Assignment.objects.get(rater=annotator).comment == "c" * size
    else:
        _refused(response, "comment", "assignment.comment")
        assert Assignment.objects.get(rater=annotator).status == Assignment.Status.ACTIVE  # nothing stored


@pytest.mark.parametrize("field, key, study_name", [
    ("comment", "assignment.comment", "codegen"),
    ("ignore_reason", "assignment.ignore_reason", "rrgen"),
    ("r1__technical_quality__reasoning", "rating.reasoning", "codegen"),
])
@pytest.mark.parametrize("size, accepted", [("at", True), ("past", False)])
def test_a_draft_is_bounded_per_field(field, key, study_name, size, accepted, request, annotator, api_for):
    study = request.getfixturevalue(study_name)
    api = api_for(annotator)
    url = _rate_url(api, study)
    text = "x" * (limit(key) + (size == "past"))
    if field == "comment":
        answers = {"comment": text}
    elif field == "ignore_reason":
        answers = {"ignored": True, "ignore_reason": text}
    else:
        answers = {"responses": {"1": {"technical_quality": {"value": 3, "reasoning": text}}}}
    response = api.post(url + "draft/", {"answers": answers}, format="json")
    if accepted:
        assert response.status_code == 200 and response.json() == {"saved": True}
    else:
        _refused(response, field, key)
        assert Assignment.objects.get(rater=annotator).draft == {}


@pytest.mark.parametrize("extra, accepted", [pytest.param(0, True, id="at"), pytest.param(1, False, id="past")])
def test_a_draft_is_bounded_in_bytes(extra, accepted, codegen, annotator, api_for, settings):
    settings.CONCORD_LIMITS = {"assignment.draft": 2000, "assignment.comment": 5000}
    api = api_for(annotator)
    url = _rate_url(api, codegen)
    empty = {"responses": {}, "item": {}, "ignored": False, "ignore_reason": "", "comment": ""}
    comment = "d" * (2000 - len(json.dumps(empty)) + extra)
    response = api.post(url + "draft/", {"answers": {"comment": comment}}, format="json")
    if accepted:
        assert response.status_code == 200
    else:
        assert response.status_code == 400
        assert response.json()["errors"]["answers"] == f"draft: at most 2,000 bytes of answers (this has 2,001)"


@pytest.mark.parametrize("size, accepted", at_and_past("rating.spans"))
def test_highlights_per_answer_are_bounded(size, accepted, make_study, annotator, api_for):
    study = make_study("rrgen-001", annotators=[annotator],
                       items_text=json.dumps({"id": "i", "context": "c", "outputs": [
                           {"system": "s", "content": "x" * 1000}]}) + "\n")
    key = next(c for c in study.rubric["criteria"] if c["kind"] == "spans")["key"]
    api = api_for(annotator)
    url = _rate_url(api, study)
    spans = [{"start": n, "end": n + 1} for n in range(size)]
    answers = complete_answers(study.rubric, 1)
    answers["responses"]["1"][key] = {"value": spans, "reasoning": ""}
    response = api.post(url + "submit/", {"answers": answers}, format="json")
    assert response.status_code == (200 if accepted else 400), response.content
    if not accepted:
        assert f"at most {limit('rating.spans')} highlights" in response.json()["errors"][f"r1__{key}"]


# ------------------------------------------------------------------ researchers and admins


@pytest.fixture
def released(make_study, researcher):
    return make_study("rrgen-001", researchers=[researcher], items_text=items_jsonl(1))


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.mark.parametrize("size, accepted", at_and_past("release.changelog"))
def test_a_release_changelog_is_bounded(size, accepted, released, researcher, api_for, client_for,
                                        django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        api = api_for(researcher).post(f"/api/studies/{released.slug}/releases/",
                                       {"version": "1.0.0", "formats": ["csv"], "changelog": "l" * size}, format="json")
        page = client_for(researcher).post(reverse("release-create", args=[released.slug]),
                                           {"version": "1.0.1", "formats": ["csv"], "changelog": "l" * size})
    if accepted:
        assert api.status_code == 201 and page.status_code == 302
        assert DatasetRelease.objects.filter(study=released).count() == 2
    else:
        assert api.status_code == 400
        assert api.json()["detail"] == (f"changelog: at most {limit('release.changelog'):,} characters "
                                        f"(this has {size:,})")
        assert page.status_code == 400 and f"at most {limit('release.changelog'):,} characters" in page.content.decode()
        assert not DatasetRelease.objects.exists()


@pytest.mark.parametrize("size, accepted", at_and_past("study.instructions"))
def test_study_instructions_are_bounded(size, accepted, admin_user, preset_version, api_for):
    response = api_for(admin_user).post("/api/studies/", {
        "name": "Bounded", "rubric_version": preset_version["rrgen-001"].pk, "instructions": "i" * size},
        format="json")
    if accepted:
        assert response.status_code == 201
    else:
        assert response.status_code == 400
        assert f"instructions: at most {limit('study.instructions'):,} characters" in str(response.json())
        assert not Study.objects.filter(name="Bounded").exists()


@pytest.mark.parametrize("field, key", [("context", "item.context"), ("outputs[0].content", "output.content"),
                                        ("explanation", "item.explanation")])
@pytest.mark.parametrize("size, accepted", [("at", True), ("past", False)])
def test_uploaded_item_text_is_bounded(field, key, size, accepted, make_study, admin_user, api_for):
    study = make_study("rrgen-001", items_text=items_jsonl(1), status="draft")
    text = "t" * (limit(key) + (size == "past"))
    row = {"id": "new", "context": "c", "outputs": [{"system": "s", "content": "o"}]}
    if field == "context":
        row["context"] = text
    elif field == "explanation":
        row.update(training=True, gold={"fluency": 7}, explanation=text)
    else:
        row["outputs"][0]["content"] = text
    upload = SimpleUploadedFile("items.jsonl", (json.dumps(row) + "\n").encode())
    response = api_for(admin_user).post(f"/api/studies/{study.slug}/items/", {"file": upload}, format="multipart")
    if accepted:
        assert response.status_code == 201, response.content
    else:
        assert response.status_code == 400
        (error,) = response.json()["errors"]
        assert error["field"] == field and error["message"].startswith(f"at most {limit(key):,} characters")
        assert not study.items.filter(external_id="new").exists()


@pytest.mark.parametrize("size, accepted", at_and_past("judge.description"))
def test_a_judge_description_is_bounded(size, accepted, admin_user, api_for):
    body = {"name": "bounded", "backend": "openai", "model": "m", "endpoint": "http://127.0.0.1:9/v1", "description": "j" * size}
    response = api_for(admin_user).post("/api/judges/configs/", body, format="json")
    if accepted:
        assert response.status_code == 201, response.content
    else:
        assert response.status_code == 400
        errors = {e["field"]: e["message"] for e in response.json()["errors"]}
        assert errors["description"].startswith(f"at most {limit('judge.description'):,} characters")
        assert not JudgeConfig.objects.filter(name="bounded").exists()


# ------------------------------------------------------------------ quotas per study: 429


def test_release_builds_per_hour_answer_429(released, researcher, api_for, settings,
                                             django_capture_on_commit_callbacks):
    settings.CONCORD_LIMITS = {"releases.per_study_per_hour": 3}
    api = api_for(researcher)
    url = f"/api/studies/{released.slug}/releases/"
    with django_capture_on_commit_callbacks(execute=False):
        assert api.post(url, {"version": "1.0.0", "formats": ["csv", "jsonl"]}, format="json").status_code == 201
        DatasetRelease.objects.update(status=DatasetRelease.Status.READY)
        assert api.post(url, {"version": "1.0.1", "formats": ["csv"]}, format="json").status_code == 201  # at it
        DatasetRelease.objects.update(status=DatasetRelease.Status.READY)
        past = api.post(url, {"version": "1.0.2", "formats": ["csv"]}, format="json")
    assert past.status_code == 429
    assert past.json() == {"detail": "releases: at most 3 release builds per study an hour (3 in the last hour, "
                                     "1 more asked); try again later", "limit": "releases.per_study_per_hour"}
    assert DatasetRelease.objects.count() == 3


def test_concurrent_builds_per_study_answer_429(released, researcher, api_for, client_for, settings,
                                                django_capture_on_commit_callbacks):
    settings.CONCORD_LIMITS = {"builds.per_study_at_once": 2}
    url = f"/api/studies/{released.slug}/releases/"
    with django_capture_on_commit_callbacks(execute=False):
        assert api_for(researcher).post(url, {"version": "1.0.0", "formats": ["csv", "jsonl"]},
                                        format="json").status_code == 201  # at it: two pending
        past = api_for(researcher).post(url, {"version": "1.0.1", "formats": ["csv"]}, format="json")
        page = client_for(researcher).post(reverse("release-create", args=[released.slug]),
                                           {"version": "1.0.1", "formats": ["csv"]})
    assert past.status_code == 429 and "at most 2 builds of a study at once" in past.json()["detail"]
    assert page.status_code == 429 and "at most 2 builds of a study at once" in page.content.decode()
    assert DatasetRelease.objects.count() == 2


def test_live_exports_per_hour_answer_429(released, make_study, researcher, client_for, api_for, settings):
    settings.CONCORD_LIMITS = {"exports.per_study_per_hour": 2}
    page = client_for(researcher)
    for _ in range(2):  # at the limit
        response = page.get(reverse("dataset-export", args=[released.slug, "csv"]))
        assert response.status_code == 200
        b"".join(response.streaming_content)
    past = page.get(reverse("dataset-export", args=[released.slug, "csv"]))
    assert past.status_code == 429 and "at most 2 live exports per study an hour" in past.content.decode()
    api = api_for(researcher).get(f"/api/studies/{released.slug}/export/", {"file": "csv"})
    assert api.status_code == 429 and api.json()["limit"] == "exports.per_study_per_hour"
    assert AuditEntry.objects.filter(study=released, action=AuditEntry.Action.DATA_DOWNLOAD).count() == 2
    fresh = make_study("rrgen-001", researchers=[researcher], items_text=items_jsonl(1), slug="fresh")
    assert page.get(reverse("dataset-export", args=[fresh.slug, "csv"])).status_code == 200  # a quota per study


def test_the_docs_table_lists_every_limit():
    from docs.hooks.reference import limits_page

    page = limits_page()
    for lim in LIMITS.values():
        assert f"`{lim.key}`" in page and f"{lim.value:,}" in page


@pytest.mark.parametrize("extra, status", [pytest.param(0, 201, id="at"), pytest.param(1, 413, id="past")])
def test_a_json_body_is_bounded(extra, status, released, researcher, api_for, settings,
                                django_capture_on_commit_callbacks):
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == limit("request.body")  # Django enforces the table's value
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = json.dumps({"version": "1.0.0", "formats": ["csv"], "changelog": ""})
    body = body.replace('""', '"' + "p" * (1000 - len(body) + extra) + '"')
    with django_capture_on_commit_callbacks(execute=False):
        response = api_for(researcher).post(f"/api/studies/{released.slug}/releases/", body,
                                            content_type="application/json")
    assert response.status_code == status, response.content
    if status == 413:
        assert response.json()["detail"] == "request body: at most 1,000 bytes besides uploaded files"
    assert DatasetRelease.objects.count() == (status == 201)


@pytest.mark.parametrize("size, accepted", at_and_past("rating.text"))
def test_a_text_answer_is_bounded(size, accepted, make_study, annotator, api_for, preset_version):
    from rubrics.services import rubric_version_create

    version, _ = rubric_version_create(data={"slug": "notes", "name": "Notes", "criteria": [
        {"key": "notes", "name": "Notes", "kind": "text"}]})
    preset_version["notes"] = version
    study = make_study("notes", annotators=[annotator], items_text=items_jsonl(1, k=1))
    api = api_for(annotator)
    url = _rate_url(api, study)
    response = api.post(url + "submit/", {"answers": {"responses": {"1": {"notes": "n" * size}}}}, format="json")
    if accepted:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 400
        assert f"text: at most {limit('rating.text'):,} characters" in response.json()["errors"]["r1__notes"]


@pytest.mark.parametrize("size, accepted", at_and_past("questionnaire.text"))
def test_a_questionnaire_text_answer_is_bounded(size, accepted, make_study, annotator, api_for):
    study = make_study("rrgen-001", annotators=[annotator], items_text=items_jsonl(1), phases={
        "pre_questionnaire": {"questions": [{"key": "why", "text": "Why?", "kind": "text"}]}})
    api = api_for(annotator)
    assert api.post(f"/api/studies/{study.slug}/rate/next/").json()["state"] == "questionnaire"
    response = api.post(f"/api/studies/{study.slug}/questionnaire/pre/", {"answers": {"why": "w" * size}},
                        format="json")
    if accepted:
        assert response.status_code == 200 and response.json()["state"] != "questionnaire"
    else:
        assert response.status_code == 400, response.content
        assert f"at most {limit('questionnaire.text')} characters" in str(response.json())


@pytest.mark.parametrize("extra, accepted", [pytest.param(0, True, id="at"), pytest.param(1, False, id="past")])
def test_members_per_add_are_bounded(extra, accepted, released, admin_user, api_for, settings):
    settings.CONCORD_LIMITS = {"members.per_add": 2}
    from tests.conftest import make_user

    names = [make_user(f"m{k}").username for k in range(2 + extra)]
    response = api_for(admin_user).post(f"/api/studies/{released.slug}/members/",
                                        {"usernames": names, "role": "annotator"}, format="json")
    if accepted:
        assert response.status_code == 200, response.content
    else:
        assert response.status_code == 400
        assert "members: at most 2 at once (this has 3)" in str(response.json())
        assert not released.members.filter(user__username__in=names).exists()


@pytest.mark.parametrize("key", [k for k, lim in LIMITS.items() if lim.written_by_concord])
def test_text_concord_writes_is_cut_to_its_limit(key):
    from config.limits import clip

    most = limit(key)
    assert clip(key, "w" * most) == "w" * most  # at the limit: kept whole
    cut = clip(key, "w" * (most + 1))
    assert len(cut) == most and cut.endswith("…")


def test_a_version_in_every_format_fits_the_build_quotas():
    from annotation.datasets import FORMATS

    # the demo releases 1.0.0 in every format at once (judges/simulation.py); twice that fits an hour
    assert limit("builds.per_study_at_once") >= len(FORMATS)
    assert limit("releases.per_study_per_hour") >= 2 * len(FORMATS)


def test_every_limit_is_tried_here():
    """Each key of the table appears in a test of this module (at the limit and past it)."""
    from pathlib import Path

    source = Path(__file__).read_text()
    untried = [key for key, lim in LIMITS.items() if not lim.written_by_concord and f'"{key}"' not in source]
    assert untried == []


# ------------------------------------------------------------------ uploaded files: refused by size before they are read
# The limit is set to the file's own size (at it: stored) or one byte under it (the file one past it: refused).


def _past(settings, key: str, data: bytes, past: bool) -> None:
    settings.CONCORD_LIMITS = {key: len(data) - past}


AT_PAST = [pytest.param(False, id="at"), pytest.param(True, id="past")]


@pytest.mark.parametrize("past", AT_PAST)
def test_an_items_file_is_bounded(past, make_study, admin_user, api_for, client_for, settings):
    study = make_study("rrgen-001", items_text=items_jsonl(1), status="draft")
    data = items_jsonl(3, prefix="up").encode()
    _past(settings, "upload.items", data, past)
    api = api_for(admin_user).post(f"/api/studies/{study.slug}/items/",
                                   {"file": SimpleUploadedFile("items.jsonl", data)}, format="multipart")
    page = client_for(admin_user).post(reverse("manage-upload", args=[study.slug]),
                                       {"file": SimpleUploadedFile("items.jsonl", data.replace(b"up-", b"uq-"))})
    message = f"items file: at most {len(data) - past:,} bytes (this file has {len(data):,})"
    if not past:
        assert api.status_code == 201 and page.status_code in (200, 302) and study.items.count() == 7
    else:
        assert api.status_code == 400 and api.json()["file"] == [message]
        assert page.status_code == 400 and message in page.content.decode()
        assert study.items.count() == 1  # nothing stored


def _trace_study(preset_version, admin_user):
    from annotation.services.studies import study_create

    return study_create(name="Traces", rubric_version=preset_version["rrgen-001"], user=admin_user)


@pytest.mark.parametrize("past", AT_PAST)
def test_a_trace_file_is_bounded_in_bytes(past, preset_version, admin_user, settings, tmp_path):
    """import_items reads a trace file whole; an upload meets upload.items first (above)."""
    import io
    from pathlib import Path

    from django.core.management import CommandError, call_command

    study = _trace_study(preset_version, admin_user)
    path = tmp_path / "chats.jsonl"
    path.write_bytes((Path(__file__).parents[1] / "importers" / "files" / "openai-chat.jsonl").read_bytes())
    _past(settings, "upload.traces", path.read_bytes(), past)
    if not past:
        call_command("import_items", str(path), study=study.slug, stdout=io.StringIO())
        assert study.items.count() > 0
        return
    with pytest.raises(CommandError) as refused:
        call_command("import_items", str(path), study=study.slug, stdout=io.StringIO())
    most = path.stat().st_size - 1
    assert f"openai-chat file: at most {most:,} bytes, read whole (this file has more)" in str(refused.value)
    assert study.items.count() == 0


@pytest.mark.parametrize("past", AT_PAST)
def test_the_spans_of_a_trace_file_are_bounded_over_all_its_lines(past, preset_version, admin_user, settings):
    import io

    from annotation.importers import ItemFileError
    from annotation.traces import otel
    from annotation.traces.imports import file_import
    from tests.importers.test_otlp import otlp_json

    study = _trace_study(preset_version, admin_user)
    lines = [otlp_json()[0] for _ in range(2)]  # two agent runs as the OpenTelemetry SDK records them, one a line
    per_line = len(otel.spans_from_json(lines[0], max_spans=10**6))
    settings.CONCORD_LIMITS = {"traces.spans_per_file": 2 * per_line - past}
    data = io.BytesIO(b"\n".join(lines) + b"\n")
    if not past:
        assert file_import(study=study, file=data, filename="spans.jsonl", fmt="otlp-json") == 2
        return
    with pytest.raises(ItemFileError) as refused:
        file_import(study=study, file=data, filename="spans.jsonl", fmt="otlp-json")
    assert refused.value.errors == [(2, "", f"otlp-json: more than {2 * per_line - 1:,} spans in one file; split it")]
    assert study.items.count() == 0


@pytest.mark.parametrize("past", AT_PAST)
def test_a_rubric_file_is_bounded(past, admin_user, api_for, client_for, settings):
    from rubrics.models import Rubric

    data = json.dumps({"slug": "tiny", "name": "Tiny", "criteria": [
        {"key": "ok", "name": "OK", "kind": "likert", "min": 1, "max": 5}]}).encode()
    _past(settings, "upload.rubric", data, past)
    api = api_for(admin_user).post("/api/rubrics/file/", {"file": SimpleUploadedFile("tiny.json", data)},
                                   format="multipart")
    page = client_for(admin_user).post(reverse("study-create"), {
        "name": "Tiny study", "rubric_file": SimpleUploadedFile("tiny2.json", data.replace(b"tiny", b"tinz")),
        "raters_per_item": 1, "presentation": "side_by_side", "attention_check_rate": 0})
    message = f"rubric file: at most {len(data) - past:,} bytes (this file has {len(data):,})"
    if not past:
        assert api.status_code == 201, api.content
        assert page.status_code == 302 and Study.objects.filter(name="Tiny study").exists()
    else:
        assert api.status_code == 400 and api.json()["file"] == [message]
        assert page.status_code == 200 and message in page.content.decode()
        assert not Rubric.objects.filter(slug__in=["tiny", "tinz"]).exists() and not Study.objects.exists()


@pytest.mark.parametrize("past", AT_PAST)
def test_a_members_file_is_bounded(past, released, admin_user, client_for, settings):
    from tests.conftest import make_user

    data = f"{make_user('csv1').username}\n{make_user('csv2').username}\n".encode()
    _past(settings, "upload.members", data, past)
    page = client_for(admin_user).post(reverse("manage-members", args=[released.slug]), {
        "csv_file": SimpleUploadedFile("m.csv", data), "role": "annotator"})
    added = released.members.filter(user__username__in=["csv1", "csv2"]).count()
    if not past:
        assert page.status_code in (200, 302) and added == 2
    else:
        assert page.status_code == 400 and added == 0
        assert f"members file: at most {len(data) - 1:,} bytes (this file has {len(data):,})" in page.content.decode()


JUDGES = b"name: sized\nprovider: vllm\nendpoint: http://127.0.0.1:8001/v1\nmodel: m\n"


@pytest.mark.parametrize("past", AT_PAST)
@pytest.mark.parametrize("how", ["file", "text"])
def test_a_judges_file_or_paste_is_bounded(how, past, admin_user, client_for, settings):
    _past(settings, "upload.judges", JUDGES, past)
    body = {"file": SimpleUploadedFile("j.yaml", JUDGES)} if how == "file" else {"text": JUDGES.decode()}
    page = client_for(admin_user).post(reverse("judges:load"), body)
    if not past:
        assert page.status_code == 302 and JudgeConfig.objects.filter(name="sized").exists(), page.content[-2000:]
    else:
        what = "judges file" if how == "file" else "judges configuration"
        this = "this file has" if how == "file" else "this has"
        assert page.status_code == 400
        assert f"{what}: at most {len(JUDGES) - 1:,} bytes ({this} {len(JUDGES):,})" in page.content.decode()
        assert not JudgeConfig.objects.filter(name="sized").exists()


@pytest.mark.parametrize("past", AT_PAST)
def test_a_gold_file_is_bounded(past, released, researcher, client_for, settings):
    data = b"id,label\ni0,yes\n"
    _past(settings, "upload.gold", data, past)
    page = client_for(researcher).post(reverse("judges:gold", args=[released.slug]),
                                       {"gold": SimpleUploadedFile("gold.csv", data)})
    message = f"gold file: at most {len(data) - past:,} bytes (this file has {len(data):,})"
    assert (message in page.content.decode()) == past
    assert page.status_code == (400 if past else 200)


@pytest.mark.parametrize("size, accepted", at_and_past("phases.text"))
def test_phases_text_is_bounded(size, accepted, released, admin_user, client_for):
    from annotation.models import StudyChange

    text = json.dumps({"consent": {"text": "c"}})
    text += " " * (size - len(text))  # trailing spaces: still the same JSON
    page = client_for(admin_user).post(reverse("manage-phases", args=[released.slug]), {"phases": text})
    released.refresh_from_db()
    if accepted:
        assert page.status_code == 302 and "consent" in released.phases
    else:
        assert page.status_code == 400 and "consent" not in released.phases
        assert f"phases: at most {limit('phases.text'):,} characters (this has {size:,})" in page.content.decode()
        assert not StudyChange.objects.filter(study=released, field="participant phases").exists()


@pytest.mark.parametrize("past", AT_PAST)
def test_a_request_with_files_is_bounded_before_it_is_read(past, make_study, admin_user, api_for, settings):
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    study = make_study("rrgen-001", items_text=items_jsonl(1), status="draft")
    body = encode_multipart(BOUNDARY, {"file": SimpleUploadedFile("items.jsonl", items_jsonl(2, prefix="up").encode())})
    _past(settings, "request.upload", body, past)
    response = api_for(admin_user).generic("POST", f"/api/studies/{study.slug}/items/", body,
                                           content_type=MULTIPART_CONTENT)
    if not past:
        assert response.status_code == 201, response.content
    else:
        assert response.status_code == 413
        assert response.json() == {"detail": f"upload: at most {len(body) - 1:,} bytes in one request "
                                             f"(this has {len(body):,})"}
        assert study.items.count() == 1


# ------------------------------------------------------------------ OpenTelemetry traces (OTLP/HTTP): 413, 400, 429
# Set to the request's own size or span count (at it: stored) or one under it (the request one past it: refused).


def _send_traces(client, study, user, body: bytes):
    from rest_framework.authtoken.models import Token

    from tests.importers.test_otlp import otlp_url

    token = Token.objects.get_or_create(user=user)[0].key
    return client.post(otlp_url(study), body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")


@pytest.fixture
def agent_run():
    """An agent run's OTLP/JSON (the SDK's own encoding) and its item's external id."""
    from tests.importers.test_otlp import otlp_json

    body, (trace_id,) = otlp_json()
    return body, format(trace_id, "032x")


@pytest.mark.parametrize("past", AT_PAST)
def test_an_otlp_trace_body_is_bounded(past, agent_run, released, admin_user, client, settings):
    body, external_id = agent_run
    _past(settings, "otlp.body", body, past)
    response = _send_traces(client, released, admin_user, body)
    if not past:
        assert response.status_code == 200, response.content
        assert released.items.filter(external_id=external_id).exists()
    else:
        assert response.status_code == 413
        assert response.json()["message"] == f"the body is over {len(body) - 1} bytes"
        assert not released.items.filter(external_id=external_id).exists()


@pytest.mark.parametrize("past", AT_PAST)
def test_spans_per_otlp_request_are_bounded(past, agent_run, released, admin_user, client, settings):
    body, external_id = agent_run
    spans = sum(len(scope["spans"]) for resource in json.loads(body)["resourceSpans"]
                for scope in resource["scopeSpans"])
    settings.CONCORD_LIMITS = {"otlp.spans": spans - past}
    response = _send_traces(client, released, admin_user, body)
    if not past:
        assert response.status_code == 200, response.content
        assert released.items.filter(external_id=external_id).exists()
    else:
        assert response.status_code == 400  # not retried by the exporters, unlike 413 and 429
        assert response.json()["message"].startswith(f"more than {spans - 1} spans in one request")
        assert not released.items.filter(external_id=external_id).exists()


def test_otlp_requests_per_token_a_minute_answer_429(agent_run, released, admin_user, client, settings, monkeypatch):
    now = [1_800_000_030.0]  # half a minute into a rate window
    monkeypatch.setattr("annotation.traces.api._clock", lambda: now[0])
    settings.CONCORD_LIMITS = {"otlp.per_token_per_minute": 2}
    body, external_id = agent_run
    for _ in range(2):  # at the limit (the second request stores nothing twice)
        assert _send_traces(client, released, admin_user, body).status_code == 200
    past = _send_traces(client, released, admin_user, body)
    assert past.status_code == 429 and past["Retry-After"] == "30"
    assert past.json()["message"] == "more than 2 requests a minute with this token"
    now[0] += 30  # the next minute
    assert _send_traces(client, released, admin_user, body).status_code == 200
    assert released.items.filter(external_id=external_id).count() == 1


def test_a_retired_otlp_variable_fails_the_deploy_check(monkeypatch):
    """OTLP_MAX_BODY_BYTES and its kin were settings before the table kept these bounds: still set, they
    would be ignored without a word, so `check --deploy` names the key to set in CONCORD_LIMITS instead."""
    from config.checks import retired_limit_variables_check

    for name in ("OTLP_MAX_BODY_BYTES", "OTLP_MAX_SPANS", "OTLP_REQUESTS_PER_MINUTE"):
        monkeypatch.delenv(name, raising=False)
    assert retired_limit_variables_check(None) == []
    monkeypatch.setenv("OTLP_MAX_SPANS", "5000")
    (error,) = retired_limit_variables_check(None)
    assert error.id == "concord.E003" and "OTLP_MAX_SPANS is no longer read" in error.msg
    assert """CONCORD_LIMITS='{"otlp.spans": 5000}'""" in error.msg
