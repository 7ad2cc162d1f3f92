"""The access model (annotation.access) against its written rule, one persona per row: what each
may do with study A. The permission matrix derives every route's expected answer from this model;
this table is where the model itself is stated by hand."""

import pytest
from django.contrib.auth.models import AnonymousUser

from annotation.access import (Can, get_study_for, get_study_for_annotator, is_crowd_participant,
                               may_read_api_docs, studies_where, study_access)
from annotation.models import Study
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

R, T, M, P = Can.READ, Can.RATE, Can.MANAGE, Can.PARTICIPANTS
EXPECTED = {  # persona: (capabilities on A, may read the API docs)
    "anonymous": (set(), False),
    "deactivated": (set(), False),  # was a researcher of A
    "crowd": ({T}, False),
    "annotator": ({T}, True),
    "annotator-paused": ({T}, True),  # reaches the study; gets no new work (annotation.services.assignments)
    "annotator-removed": (set(), False),
    "annotator-other": (set(), True),  # a member of B
    "researcher": ({R}, True),
    "researcher-removed": (set(), False),
    "researcher-readded": ({R}, True),
    "researcher-other": (set(), True),
    "owner": ({R, M}, True),  # participants' personal data stays with site admins
    "admin": ({R, M, P}, True),
}


@pytest.fixture
def personas(make_study, admin_user):
    from annotation.services.crowd import crowd_enter, crowd_link_create
    from annotation.services.members import MemberRow, member_pause, member_remove, members_add

    u = {name: make_user(f"p-{name}") for name in EXPECTED if name not in ("anonymous", "admin", "crowd")}
    u["admin"], u["anonymous"] = admin_user, AnonymousUser()
    a = make_study("rrgen-001", annotators=[u["annotator"], u["annotator-paused"], u["annotator-removed"]],
                   researchers=[u["researcher"], u["researcher-removed"], u["researcher-readded"], u["deactivated"]])
    make_study("codegen-002", annotators=[u["annotator-other"]], researchers=[u["researcher-other"]])
    Study.objects.filter(pk=a.pk).update(created_by=u["owner"])
    a.refresh_from_db()
    link = crowd_link_create(study=a, user=admin_user, provider="prolific", completion_code="C0DE")
    u["crowd"] = crowd_enter(token=link.token, params={"PROLIFIC_PID": "access-pid", "SESSION_ID": "s"}).user
    member_pause(study=a, user_id=u["annotator-paused"].pk)
    for name in ("annotator-removed", "researcher-removed", "researcher-readded"):
        member_remove(study=a, user_id=u[name].pk)
    members_add(study=a, rows=[MemberRow(None, u["researcher-readded"].username)], role="researcher")
    u["deactivated"].is_active = False
    u["deactivated"].save(update_fields=["is_active"])
    return a, u


def test_each_persona_has_exactly_its_capabilities(personas):
    a, users = personas
    wrong = {name: sorted(study_access(users[name], a).capabilities)
             for name, (expected, _) in EXPECTED.items() if study_access(users[name], a).capabilities != expected}
    assert wrong == {}


def test_lists_use_the_same_rule(personas):
    a, users = personas
    for name, (expected, _) in EXPECTED.items():
        for capability in Can:
            listed = studies_where(users[name], capability).filter(pk=a.pk).exists()
            assert listed == (capability in expected), (name, capability)


def test_the_rating_loops_own_query_agrees(personas):
    """get_study_for_annotator is one SQL statement of its own: it must say what the model says."""
    from django.http import Http404

    a, users = personas
    for name, (expected, _) in EXPECTED.items():
        try:
            get_study_for_annotator(users[name], a.slug)
            reached = True
        except Http404:
            reached = False
        assert reached == (T in expected), name


def test_refusals_hide_the_study_except_on_the_manage_pages(personas):
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    a, users = personas
    with pytest.raises(Http404):
        get_study_for(users["researcher-removed"], a.slug, Can.READ)
    with pytest.raises(PermissionDenied):
        get_study_for(users["researcher"], a.slug, Can.MANAGE)
    with pytest.raises(Http404):
        get_study_for(users["anonymous"], a.slug, Can.MANAGE)
    with pytest.raises(Http404):  # the owner manages the study; participants' personal data is the admins'
        get_study_for(users["owner"], a.slug, Can.PARTICIPANTS)
    assert get_study_for(users["owner"], a.slug, Can.MANAGE) == get_study_for(users["admin"], a.slug, Can.PARTICIPANTS)


def test_api_docs_are_for_staff_and_members_not_crowd_participants(personas):
    _, users = personas
    assert {name for name, (_, docs) in EXPECTED.items() if may_read_api_docs(users[name])} == \
        {name for name, (_, docs) in EXPECTED.items() if docs}
    assert is_crowd_participant(users["crowd"]) and not is_crowd_participant(users["annotator"])


def test_the_home_page_lists_the_study_for_whoever_reaches_it(personas, client_for):
    from annotation.access import studies_for

    a, users = personas
    roles = {name: studies_for(users[name]).filter(pk=a.pk).values_list("role", flat=True).first()
             for name in EXPECTED}
    assert roles == {name: ("owner" if name == "owner" else "admin" if name == "admin"
                            else "annotator" if T in caps else "researcher" if R in caps else None)
                     for name, (caps, _) in EXPECTED.items()}
    page = client_for(users["owner"]).get("/").content.decode()
    assert f'href="/studies/{a.slug}/manage/"' in page and "Owner · rubric" in page
