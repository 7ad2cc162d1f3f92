"""Blinding: render every annotator-facing page and API response for every preset and look for
anything that unblinds: system names, other raters' answers, item ids."""

from __future__ import annotations

import json

import pytest

from annotation.models import Assignment, Output
from annotation.services.assignments import assignment_next
from annotation.services.ratings import assignment_submit
from tests.conftest import make_user
from tests.workspace.conftest import answers_to_form, complete_answers

PRESETS = ["rrgen-001", "aqua-003", "codegen-002", "feedback-000", "fulltext-004"]
OTHER_RATER_MARK = "ZEBRA-other-rater-note-7731"
HTMX = {"HTTP_HX_REQUEST": "true"}


def _pages_of_one_rater(study, rater, client, api) -> list[tuple[str, str]]:
    """Walk the whole study as `rater` through HTML and API; return (what, body) pairs."""
    base = f"/studies/{study.slug}/rate/"
    seen: list[tuple[str, str]] = []

    def keep(what: str, response) -> None:
        assert response.status_code in (200, 302), (what, response.status_code)
        seen.append((what, response.content.decode()))

    keep("guidelines page", client.get(base + "guidelines/"))
    keep("guidelines fragment", client.get(base + "guidelines/", **HTMX))
    use_api = False
    while True:
        if use_api:
            response = api.post(f"/api/studies/{study.slug}/rate/next/")
            keep("api next", response)
            data = response.json()
            if data["assignment"] is None:
                break
            token = data["assignment"]["token"]
            keep("api assignment", api.get(f"/api/studies/{study.slug}/rate/{token}/"))
            a = Assignment.objects.get(token=token)
            keep("api draft", api.post(f"/api/studies/{study.slug}/rate/{token}/draft/",
                                       {"answers": {}}, format="json"))
            keep("api invalid submit",
                 _as_ok(api.post(f"/api/studies/{study.slug}/rate/{token}/submit/", {"answers": {}}, format="json")))
            answers = complete_answers(study.rubric, len(a.permutation))
            keep("api submit", api.post(f"/api/studies/{study.slug}/rate/{token}/submit/?next=1",
                                        {"answers": answers}, format="json"))
        else:
            response = client.get(base)
            keep("workspace", response)
            a = Assignment.objects.filter(study=study, rater=rater, status="active").first()
            if a is None:
                break
            keep("workspace fragment", client.get(base, **HTMX))
            keep("detail", client.get(f"{base}{a.token}/"))
            keep("draft", client.post(f"{base}{a.token}/draft/", {"comment": "x"}))
            keep("invalid submit", _as_ok(client.post(f"{base}{a.token}/submit/", {})))
            form = answers_to_form(complete_answers(study.rubric, len(a.permutation)))
            keep("htmx submit", client.post(f"{base}{a.token}/submit/", form, **HTMX))
            keep("revise page", client.get(f"{base}{a.token}/"))
        use_api = not use_api
    keep("history", client.get(base + "history/"))
    keep("home", client.get("/"))
    return seen


FORBIDDEN_KEYS = {"system", "output", "output_id", "outputs", "item", "item_id", "external_id", "rater", "rater_id",
                  "id", "position", "permutation", "gold", "metadata"}


def _keys(data) -> set[str]:
    """Every object key anywhere in a JSON document, except inside the rubric (criterion keys and
    item-level answers are named by the rubric's author, and an "item" block holds item-level answers)."""
    if isinstance(data, list):
        return set().union(*map(_keys, data)) if data else set()
    if not isinstance(data, dict):
        return set()
    out = set()
    for key, value in data.items():
        if key in ("rubric", "answers"):
            continue
        out.add(key)
        out |= _keys(value)
    return out


class _as_ok:  # an expected 400 counts as a page to scan
    def __init__(self, response):
        assert response.status_code == 400
        self.status_code, self.content = 200, response.content


@pytest.mark.parametrize("preset", PRESETS)
def test_no_system_name_or_other_raters_answer_reaches_an_annotator(preset, make_study, client_for, api_for):
    me, other = make_user(f"me-{preset}"), make_user(f"other-{preset}")
    study = make_study(preset, annotators=[me, other], raters_per_item=2)
    # Another rater answers everything first, leaving a recognisable note wherever the rubric allows.
    while (a := assignment_next(study=study, rater=other)) is not None:
        answers = complete_answers(study.rubric, len(a.permutation), reasoning=OTHER_RATER_MARK,
                                   comment=OTHER_RATER_MARK)
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=1)
    pages = _pages_of_one_rater(study, me, client_for(me), api_for(me))
    assert Assignment.objects.filter(rater=me, status="submitted").count() == study.items.count()

    systems = set(Output.objects.filter(item__study=study).values_list("system", flat=True))
    external_ids = set(study.items.values_list("external_id", flat=True))
    assert systems and len(pages) > 10
    for what, body in pages:
        low = body.lower()
        for system in systems:
            assert system.lower() not in low, f"{system!r} in {what}"
        for external_id in external_ids:
            assert external_id not in body, f"item id {external_id!r} in {what}"
        assert OTHER_RATER_MARK not in body, f"another rater's note in {what}"
        if what.startswith("api"):
            assert not _keys(json.loads(body)) & FORBIDDEN_KEYS, what
        else:
            assert "data-output" not in body and "output_id" not in body


def test_api_payload_keys_are_the_blinded_ones(make_study, api_for):
    me = make_user("keys")
    study = make_study("codegen-002", annotators=[me])
    data = api_for(me).post(f"/api/studies/{study.slug}/rate/next/").json()["assignment"]
    assert set(data) == {"token", "status", "presentation", "context", "responses", "rubric", "answers",
                         "time_on_task_ms"}
    assert all(set(r) == {"number", "kind", "content"} for r in data["responses"])
    assert json.dumps(data["rubric"]).find("judge") == -1
