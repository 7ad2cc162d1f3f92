"""A single-use link opened by several people at the same moment makes exactly one account."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.models import StudyInvitation, StudyMember
from annotation.services.invitations import InvitationError, invitation_accept, invitation_create
from tests.manage.conftest import items_jsonl

pytestmark = pytest.mark.django_db(transaction=True)


def test_single_use_link_under_concurrent_sign_ups(make_study, admin_user):
    study = make_study("rrgen-001", items_text=items_jsonl(2))
    inv = invitation_create(study=study, user=admin_user, days=1, max_uses=1)
    n = 6
    barrier = threading.Barrier(n)
    outcomes = []

    def sign_up(i: int) -> None:
        try:
            barrier.wait()
            invitation_accept(token=inv.token, username=f"racer{i}", password="a-Long-pass-9")
            outcomes.append("joined")
        except InvitationError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=sign_up, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("joined") == 1, outcomes
    assert all("used already" in o for o in outcomes if o != "joined")
    assert get_user_model().objects.filter(username__startswith="racer").count() == 1
    assert StudyMember.objects.filter(study=study, user__username__startswith="racer").count() == 1
    assert StudyInvitation.objects.get(pk=inv.pk).uses == 1
