"""A panel id is a rater of one study: the same Prolific id through two studies' links is two
accounts, each a member of its own study only, unless a site admin made both links with
`shared_identity`. A crowd link never replaces a signed-in session without the person confirming."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client

from annotation.models import CrowdParticipant, StudyMember
from annotation.services.crowd import CrowdError, crowd_link_create
from annotation.services.participant_data import participant_ids_purge
from tests.conftest import PASSWORD
from tests.manage.conftest import items_jsonl

PID = "5f1a2b3c4d"


@pytest.fixture
def other_study(make_study):
    return make_study("rrgen-001", items_text=items_jsonl(4), slug="other-study")


def link_of(study, admin_user, **options):
    return crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C1X2Y3", **options)


_browsers: dict[tuple, Client] = {}  # a participant's own browser: they are held by the one that started


@pytest.fixture(autouse=True)
def _fresh_browsers():
    _browsers.clear()


def enter(link, pid: str = PID, client: Client | None = None):
    browser = client or _browsers.setdefault((link.pk, pid), Client())
    resp = browser.get(f"/crowd/{link.token}/", {"PROLIFIC_PID": pid, "STUDY_ID": "s", "SESSION_ID": "x"})
    assert resp.status_code == 302, resp.content[:500]
    return CrowdParticipant.objects.filter(link=link, participant_id=pid).get().user


def studies_of(user) -> set[int]:
    return set(StudyMember.objects.filter(user=user).values_list("study_id", flat=True))


def test_one_panel_id_is_one_rater_per_study(study, other_study, admin_user):
    first = enter(link_of(study, admin_user))
    second = enter(link_of(other_study, admin_user))
    assert first.pk != second.pk
    assert (first.username, second.username) == (f"prolific-{PID}", f"prolific-{PID}.{other_study.pk}")
    assert studies_of(first) == {study.pk} and studies_of(second) == {other_study.pk}
    assert not second.has_usable_password()
    # a second link of the same study, and coming back by either: the same rater
    assert enter(link_of(study, admin_user)).pk == first.pk == enter(CrowdParticipant.objects.filter(
        user=first).first().link).pk
    assert get_user_model().objects.filter(username__startswith=f"prolific-{PID}").count() == 2


def test_shared_identity_is_an_admins_deliberate_choice(study, other_study, admin_user, researcher):
    with pytest.raises(CrowdError) as exc:
        link_of(other_study, researcher, shared_identity=True)
    assert exc.value.field == "shared_identity"
    plain = enter(link_of(study, admin_user))  # a rule-following link: its rater stays its study's
    shared_a = enter(link_of(study, admin_user, shared_identity=True))
    assert shared_a.pk == plain.pk  # within one study a panel id is one rater whatever the link
    shared_b = enter(link_of(other_study, admin_user, shared_identity=True), pid="longitudinal1")
    shared_c = enter(link_of(study, admin_user, shared_identity=True), pid="longitudinal1")
    assert shared_b.pk == shared_c.pk and studies_of(shared_b) == {study.pk, other_study.pk}
    # a study whose link does not share never joins a shared rater
    third = enter(link_of(other_study, admin_user), pid="p-elsewhere")
    assert enter(link_of(study, admin_user, shared_identity=True), pid="p-elsewhere").pk != third.pk


def test_an_account_with_a_password_is_never_taken_over(study, admin_user):
    owner = get_user_model().objects.create_user(f"prolific-{PID}", password=PASSWORD)
    rater = enter(link_of(study, admin_user))
    assert rater.pk != owner.pk and rater.username == f"prolific-{PID}.{study.pk}"
    assert studies_of(owner) == set()


def test_the_purge_renames_a_study_scoped_account(study, other_study, admin_user):
    from datetime import timedelta

    from django.utils import timezone

    enter(link_of(study, admin_user))
    scoped = enter(link_of(other_study, admin_user))
    other_study.retention_days = 1
    other_study.save(update_fields=["retention_days"])
    assert participant_ids_purge(now=timezone.now() + timedelta(days=2)) == 1
    scoped.refresh_from_db()
    p = CrowdParticipant.objects.get(user=scoped)
    assert scoped.username == f"prolific-{p.participant_id}.{other_study.pk}" and PID not in scoped.username


def test_a_signed_in_browser_is_asked_before_the_link_signs_it_out(study, admin_user):
    link = link_of(study, admin_user)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    url = f"/crowd/{link.token}/?PROLIFIC_PID={PID}&STUDY_ID=s&SESSION_ID=x"
    page = browser.get(url)
    assert page.status_code == 200 and b'data-testid="crowd-confirm"' in page.content
    assert admin_user.username.encode() in page.content
    assert int(browser.session[SESSION_KEY]) == admin_user.pk and not CrowdParticipant.objects.exists()
    # without the page's CSRF token (another site posting the form) nothing happens
    assert browser.post(url).status_code == 403
    assert int(browser.session[SESSION_KEY]) == admin_user.pk and not CrowdParticipant.objects.exists()
    token = page.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    entered = browser.post(url, {"csrfmiddlewaretoken": token})
    assert entered.status_code == 302 and entered["Location"].endswith(f"/studies/{study.slug}/rate/")
    participant = CrowdParticipant.objects.get()
    assert int(browser.session[SESSION_KEY]) == participant.user_id != admin_user.pk
    # the participant's own reload needs no confirmation
    assert browser.get(url).status_code == 302
    # a broken link says so, rather than asking
    assert browser.get(f"/crowd/{link.token}/").status_code == 400


def test_the_migration_splits_an_account_several_studies_shared(study, other_study, admin_user):
    """Data made before the rule: one account entered both studies by their links (it was found by its
    name). The migration gives the second study its own account with that study's rows."""
    import importlib

    from django.apps import apps

    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment, AuditEntry, StudyChange
    from annotation.services.assignments import assignment_next

    merged = get_user_model()(username="prolific-merged1")
    merged.set_unusable_password()
    merged.save()
    person = get_user_model().objects.create_user("prolific-person", password=PASSWORD)  # made by a person
    for s in (study, other_study):
        for user, pid in ((merged, "merged1"), (person, "person")):
            StudyMember.objects.create(study=s, user=user, role="annotator")
            CrowdParticipant.objects.create(link=link_of(s, admin_user), user=user, participant_id=pid)
            assignment_next(study=s, rater=user)
    StudyChange.objects.create(study=other_study, user=merged, field="member prolific-merged1", old="active",
                               new="paused")
    AuditEntry.objects.create(study=other_study, action="member_change", target="prolific-merged1, prolific-merged10",
                              detail={"added": ["prolific-merged1", "prolific-merged10"]})
    module = importlib.import_module("annotation.migrations.0020_split_crowd_accounts")

    assert module.split_shared_crowd_accounts(apps) == 1
    second = get_user_model().objects.get(username=f"prolific-merged1.{other_study.pk}")
    assert not second.has_usable_password()
    assert studies_of(merged) == {study.pk} and studies_of(second) == {other_study.pk}
    assert set(Assignment.objects.filter(rater=second).values_list("study", flat=True)) == {other_study.pk}
    assert CrowdParticipant.objects.get(user=second).link.study_id == other_study.pk
    assert StudyChange.objects.get(study=other_study, user=second).field == f"member {second.username}"
    audit = AuditEntry.objects.get(study=other_study, action="member_change", detail__has_key="added")
    assert audit.target == f"{second.username}, prolific-merged10"  # the other name untouched
    assert audit.detail["added"] == [second.username, "prolific-merged10"]
    assert studies_of(person) == {study.pk, other_study.pk}  # an account with a password: left alone
    # the participant coming back to the second study by its link (their item's lease long over) is the new account
    Assignment.objects.filter(rater=second).update(expires_at=timezone.now() - timedelta(days=1))
    assert enter(CrowdParticipant.objects.get(user=second).link, pid="merged1").pk == second.pk
    assert module.split_shared_crowd_accounts(apps) == 0  # nothing shared is left
