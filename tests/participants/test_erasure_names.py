"""Erasure rewrites exactly the erased person's name, as a whole name: in the change log and in audit
entries, including those that name several people at once; names that contain it ("anna", "joann",
"ann.b") stay as they were."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.audit import replace_name
from annotation.models import AuditEntry, StudyChange
from annotation.services.members import member_pause, members_add, parse_pasted
from annotation.services.participant_data import participant_erase

NAMES = ["ann", "anna", "joann", "ann.b"]


@pytest.mark.parametrize("text,expected", [
    ("added ann, anna, joann, ann.b", "added X, anna, joann, ann.b"),
    ("ann joined through an invitation link", "X joined through an invitation link"),
    ("member ann", "member X"),
    ("paused by ann.", "paused by X."),  # a full stop ends the sentence, not the name
    ("anna, joann, ann.b, ann_2, ann-x, ann@x.org, xann", "anna, joann, ann.b, ann_2, ann-x, ann@x.org, xann"),
])
def test_replace_name_is_whole_names_only(text, expected):
    assert replace_name(text, "ann", "X") == expected


@pytest.fixture
def people(study, admin_user):
    users = {n: get_user_model().objects.create_user(n, password="pw-for-tests-only") for n in NAMES}
    members_add(study=study, rows=parse_pasted("\n".join(NAMES)), role="annotator", user=admin_user)
    for name in NAMES:
        member_pause(study=study, user_id=users[name].pk, user=admin_user)
    return users


def _log(study) -> list[tuple[str, str, str]]:
    return sorted(StudyChange.objects.filter(study=study).values_list("field", "old", "new"))


def _audit(study) -> list[tuple[str, dict]]:
    return sorted((e.target, e.detail) for e in AuditEntry.objects.filter(study=study, action="member_change")
                  .order_by("id"))


@pytest.mark.parametrize("erased", NAMES)
@pytest.mark.parametrize("mode", ["pseudonymise", "delete"])
def test_erasure_renames_only_the_erased_name(study, people, admin_user, erased, mode):
    log_before, audit_before = _log(study), _audit(study)
    added = [e for e in AuditEntry.objects.filter(study=study, action="member_change")
             if "ann" in e.detail.get("added", [])]
    assert len(added) == 1 and added[0].detail["added"] == NAMES  # one entry naming all four

    erasure = participant_erase(study=study, user_id=people[erased].pk, mode=mode, by=admin_user)

    def renamed(text: str) -> str:  # what each name should read now, built from the lists, not the code
        return ", ".join(erasure.pseudonym if t == erased else t for t in text.split(", "))

    expected_log = sorted(
        (f"member {erasure.pseudonym}" if field == f"member {erased}" else field, old,
         "added " + renamed(new[len("added "):]) if new.startswith("added ") else new)
        for field, old, new in log_before)
    assert _log(study) == expected_log
    expected_audit = sorted(
        (renamed(target), {k: [erasure.pseudonym if n == erased else n for n in v] if k == "added" else v
                           for k, v in detail.items()})
        for target, detail in audit_before)
    assert _audit(study) == expected_audit
    # nothing in the study's logs names the erased person any more; every other name is still there
    text = " ".join(f"{f} {o} {n}" for f, o, n in _log(study)) + " ".join(t for t, _ in _audit(study))
    tokens = set(text.replace(",", " ").split())
    assert erased not in tokens and set(NAMES) - {erased} <= tokens


def test_audit_entries_they_acted_in_lose_their_name(study, people, admin_user):
    """An entry the erased person made themselves (their actor name) is renamed too."""
    from annotation.audit import Action, audit_record

    audit_record(actor=people["ann"], action=Action.PARTICIPANT_DOWNLOAD, study=study, target="ann",
                 detail={"format": "json", "who": ["anna", "ann"]})
    erasure = participant_erase(study=study, user_id=people["ann"].pk, mode="pseudonymise", by=admin_user)
    entry = AuditEntry.objects.get(study=study, action="participant_download")
    assert (entry.actor_name, entry.target, entry.detail) == (
        erasure.pseudonym, erasure.pseudonym, {"format": "json", "who": ["anna", erasure.pseudonym]})
    assert entry.actor.username == erasure.pseudonym  # the stand-in account, not theirs
