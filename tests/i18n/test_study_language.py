"""A study's language is one of its settings (logged like the others) and rules its raters' pages,
whatever the browser asks for; a language the platform has no translation for is refused."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from annotation.models import StudyChange
from annotation.services.studies import study_settings_update

pytestmark = pytest.mark.django_db


def test_the_study_language_rules_the_workspace(make_study, annotator, admin_user, client_for):
    study = make_study("rrgen-001", annotators=[annotator])
    rater = client_for(annotator)
    page = rater.get(f"/studies/{study.slug}/rate/", HTTP_ACCEPT_LANGUAGE="en")
    assert "Submit" in page.content.decode() and page["Content-Language"] == "en"
    study_settings_update(study=study, user=admin_user, changes={"language": "de"})
    assert StudyChange.objects.filter(study=study, field="language", new="de").exists()
    page = rater.get(f"/studies/{study.slug}/rate/", HTTP_ACCEPT_LANGUAGE="en")
    html = page.content.decode()
    assert page["Content-Language"] == "de" and '<html lang="de"' in html and "Absenden" in html
    assert "/jsi18n/de/" in html
    catalog = rater.get("/jsi18n/de/")
    assert catalog.status_code == 200 and "Wird abgesendet" in catalog.content.decode()
    assert rater.get("/jsi18n/xx/").status_code == 404
    manage = client_for(admin_user).get(f"/studies/{study.slug}/manage/")
    assert 'name="language"' in manage.content.decode()


def test_the_browser_chooses_when_the_study_does_not(make_study, annotator, client_for):
    study = make_study("rrgen-001", annotators=[annotator])
    page = client_for(annotator).get(f"/studies/{study.slug}/rate/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9")
    assert "Absenden" in page.content.decode() and page["Content-Language"] == "de"


def test_a_language_without_a_translation_is_refused(make_study, admin_user):
    study = make_study("rrgen-001")
    with pytest.raises(ValidationError):
        study_settings_update(study=study, user=admin_user, changes={"language": "fr"})
    study.refresh_from_db()
    assert study.language == ""
