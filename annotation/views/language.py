"""The language of a rater's pages: the study's (Study.language) when it names one, else the browser's
(LocaleMiddleware). A rubric's and an item's own texts are the study's and are never translated."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET
from django.views.i18n import JavaScriptCatalog

from annotation.access import get_study_and_own_assignment, get_study_for_annotator
from annotation.models import Assignment, Study

LANGUAGE_CODES = {code for code, _ in settings.LANGUAGES}


def rater_study(request: HttpRequest, slug: str) -> Study:
    """get_study_for_annotator, with the study's language active for the rest of the request."""
    study = get_study_for_annotator(request.user, slug)
    study_language_activate(request, study)
    return study


def rater_study_and_assignment(request: HttpRequest, slug: str, token) -> tuple[Study, Assignment]:
    """get_study_and_own_assignment, with the study's language active for the rest of the request."""
    study, assignment = get_study_and_own_assignment(request.user, slug, token)
    study_language_activate(request, study)
    return study, assignment


def study_language_activate(request: HttpRequest, study: Study) -> None:
    if study.language in LANGUAGE_CODES:
        translation.activate(study.language)
        request.LANGUAGE_CODE = study.language


_catalog = JavaScriptCatalog.as_view()


@require_GET
@cache_control(max_age=3600, public=True)
def javascript_catalog(request: HttpRequest, lang: str) -> HttpResponse:
    """Django's JavaScript catalog in the language the page was rendered in (named in the URL, so a
    study's language holds for its scripts too, whatever the browser asks for)."""
    if lang not in LANGUAGE_CODES:
        raise Http404("No such language")
    with translation.override(lang):
        return _catalog(request)
