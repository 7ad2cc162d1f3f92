"""The participant phases in German, in real headless Chromium, like the workspace: a participant walks
every phase state (tests/a11y/phase_flow.py) once with the study in English and once in German, and no
text of the platform's own is left in English in any state. The study's own texts (consent markdown,
questions and their options, titles, completion text) stay as written."""

from __future__ import annotations

import json

import pytest

from annotation.models import CrowdParticipant, Study
from tests.a11y.phase_flow import phases_study_and_link, walk_phases
from tests.i18n.test_rater_pages import ARTIFACTS, TEXTS_JS, _english_left, _owned
from tests.screens import screenshot
from tests.ui.conftest import page_at  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _walk(page, live_server, study, link, language: str) -> dict[str, list[str]]:
    Study.objects.filter(pk=study.pk).update(language=language)
    texts: dict[str, list[str]] = {}

    def visit(name: str) -> None:
        assert page.get_attribute("html", "lang") == language, name
        texts[name] = page.evaluate(TEXTS_JS)
        if language == "de":
            screenshot(page, ARTIFACTS / f"phase-de-{name.replace(' ', '_').replace(',', '')}.png")

    walk_phases(page, live_server.url, study, link, visit, tag=language)
    return texts


def test_every_phase_state_is_german_when_the_study_says_so(page_at, live_server, make_study, admin_user):
    study, link = phases_study_and_link(make_study, admin_user)
    page = page_at(1400)
    english = _walk(page, live_server, study, link, "en")
    german = _walk(page, live_server, study, link, "de")
    assert set(english) == set(german) and len(german) == 12
    participants = CrowdParticipant.objects.filter(link=link).select_related("user")
    owned = "\n".join([_owned(study, admin_user), json.dumps(study.phases, ensure_ascii=False), link.completion_code,
                       *study.items.values_list("explanation", flat=True),
                       *(f"{p.user.username} {p.participant_id}" for p in participants)])
    left = {name: _english_left(german[name], english[name], owned) for name in german}
    assert not any(left.values()), {name: texts for name, texts in left.items() if texts}
    joined = {name: " ".join(texts) for name, texts in german.items()}
    assert "Ich willige ein und fahre fort" in joined["consent"]
    assert "eine Antwort ist erforderlich" in joined["pre-questionnaire, required answers missing"]
    assert "nicht bestandenen Aufmerksamkeitsprüfungen" in joined["instructions"]
    assert "Weiter" in joined["training result, no retry left"]
