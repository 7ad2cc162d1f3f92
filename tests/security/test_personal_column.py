"""The route table's data column against what each route really renders: with ratings planted from a crowd
participant (panel id `matrix-pid`, in their account's name) and an annotator (`m-annotator`), every route
marked as serving nothing, the study's content or the user's own work shows neither of them; the pages
marked personal do show them (test_personal_data_audited.py checks that each serving is audited once)."""

from __future__ import annotations

import pytest

from annotation.models import Assignment
from annotation.services.ratings import assignment_submit
from config.routes import ROUTES, Data, url_patterns
from tests.security.test_permission_matrix import client_as, path_for, world  # noqa: F401 - the fixture
from tests.workspace.conftest import complete_answers

pytestmark = pytest.mark.django_db

PANEL_ID = "matrix-pid"  # the crowd persona's, as the permission matrix's world enters it
RATER = "m-annotator"  # the annotators' names (m-annotator, m-annotator-paused, ...)
UNMARKED = [p for p in url_patterns() if ROUTES[p.key].data in (Data.NONE, Data.STUDY, Data.OWN)
            and "format" not in p.params and not p.key.startswith("django-admin")]


@pytest.fixture
def rated(world):  # noqa: F811 - the fixture
    """The crowd participant and the annotator each submit their item, so that every statistic counts them."""
    for persona in ("crowd", "annotator"):
        a = Assignment.objects.select_related("study__rubric_version", "item").get(token=world.tokens[persona])
        assignment_submit(assignment=a, answers=complete_answers(a.study.rubric_version.definition,
                                                                 a.item.outputs.count(), comment="fine"))
    return world


def _body(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode("utf-8", "replace")


def test_routes_not_marked_personal_name_no_participant(rated):
    """Read as a site admin (who reaches every route); a route of the user's own work is read by a rater,
    who may see their own name but no other participant's."""
    shown, leaks = 0, []
    for pattern in UNMARKED:
        own = ROUTES[pattern.key].data == Data.OWN
        persona = "annotator" if own else "admin"
        response = client_as(persona, rated).get(path_for(pattern, rated, persona))
        if response.status_code != 200:
            continue
        shown += 1
        body = _body(response)
        planted = (PANEL_ID,) if own else (PANEL_ID, RATER)
        leaks += [(pattern.key, name) for name in planted if name in body]
    assert shown >= 35, shown  # the check saw the pages (37 on 2026-12-06), not only refusals
    assert not leaks, leaks


@pytest.mark.parametrize("key", ["page:progress-page", "page:report"])
def test_the_pages_marked_personal_do_show_participants(rated, key):
    pattern = next(p for p in url_patterns() if p.key == key)
    assert ROUTES[key].data == Data.PERSONAL
    body = _body(client_as("admin", rated).get(path_for(pattern, rated, "admin")))
    assert PANEL_ID in body or RATER in body, key


NAMES = [p for p in url_patterns() if ROUTES[p.key].data == Data.NAMES and "format" not in p.params]


@pytest.mark.parametrize("persona", ["admin", "owner"])
def test_routes_of_members_names_show_no_panel_id(rated, persona):
    """Members' names with counts (Data.NAMES), read by a site admin and by the study's owner: a crowd
    account is shown by number, never by the panel id its username holds (issue 55 §3)."""
    shown, leaks = 0, []
    for pattern in NAMES:
        response = client_as(persona, rated).get(path_for(pattern, rated, persona))
        if response.status_code != 200:
            continue
        shown += 1
        if PANEL_ID in _body(response):
            leaks.append(pattern.key)
    assert shown >= 1 and not leaks, (shown, leaks)


def test_the_manage_page_names_a_crowd_member_by_number(rated):
    from django.urls import reverse

    from annotation.models import StudyMember

    crowd = StudyMember.objects.get(study=rated.study, user__username__contains=PANEL_ID)
    admin = client_as("admin", rated)
    body = _body(admin.get(reverse("study-manage", args=[rated.study.slug])))
    assert f"crowd participant {crowd.pk} (prolific)" in body and RATER in body  # the rater by name
    answer = admin.post(reverse("manage-member-status", args=[rated.study.slug]),
                        {"user": crowd.user_id, "action": "pause"})
    assert answer.status_code == 302
    page = _body(admin.get(answer.url))
    assert f"crowd participant {crowd.pk} (prolific) is paused" in page  # the notice
    assert f"Member crowd participant {crowd.pk} (prolific)" in page and PANEL_ID not in page  # the change log
