"""A crowd participant driven through the real routes, as their browser session: the entry link, then
the phase endpoints the workspace uses (`/api/studies/<slug>/...`, session-authenticated), and the
workspace page itself for what they see at the end. Answers to the demo's phases (CROWD_PHASES)."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import F
from django.test import Client

from annotation.models import Assignment, CrowdParticipant
from tests.phases.conftest import expected_winner, pair_answers

PRE = {"native_english": "no", "ai_use": 4}
CHECK_RIGHT, CHECK_WRONG = {"length": "not necessarily"}, {"length": "yes"}
POST = {"difficulty": 2}


def after_a_break(study, pid: str, minutes: int | None = None) -> None:
    """As if `minutes` (default: one more than CROWD_BROWSER_IDLE_MINUTES) had passed since the crowd
    participant `pid` last did anything: every time stored of them and their items moved that far back,
    so that a new browser may take them over (annotation.services.crowd's one-browser rule)."""
    back = timedelta(minutes=settings.CROWD_BROWSER_IDLE_MINUTES + 1 if minutes is None else minutes)
    people = CrowdParticipant.objects.filter(link__study=study, participant_id=pid)
    assert people.exists(), pid
    people.update(**{f: F(f) - back for f in ("started_at", "seen_at", "deadline", "finished_at")})
    Assignment.objects.filter(study=study, rater__in=people.values("user")).update(
        **{f: F(f) - back for f in ("created_at", "expires_at", "submitted_at")})


class Walk:
    def __init__(self, study, url: str, client: Client | None = None):
        """`url`: the study URL as the panel opens it (absolute or a path, with the panel's query)."""
        self.study, self.client = study, client or Client()
        parts = urlsplit(url)
        self.entry = self.client.get(f"{parts.path}?{parts.query}" if parts.query else parts.path)

    def _post(self, path: str, body: dict | None = None):
        return self.client.post(f"/api/studies/{self.study.slug}/{path}", json.dumps(body or {}),
                                content_type="application/json")

    def state(self) -> dict:
        resp = self._post("rate/next/")
        assert resp.status_code == 200, resp.content.decode()[:300]
        return resp.json()

    def consent(self, agree: bool = True) -> dict:
        return self._post("consent/", {"agree": agree}).json()

    def pre(self) -> dict:
        return self._post("questionnaire/pre/", {"answers": PRE}).json()

    def instructions(self, right: bool = True):
        return self._post("instructions/", {"answers": CHECK_RIGHT if right else CHECK_WRONG})

    def post_questionnaire(self) -> dict:
        return self._post("questionnaire/post/", {"answers": POST}).json()

    def retry_training(self) -> dict:
        return self._post("training/retry/").json()

    def answer(self, state: dict, *, right: bool = True) -> dict:
        """Submit the assignment `state` holds (a training item answered right or wrong); the next state."""
        a = Assignment.objects.get(token=state["assignment"]["token"])
        winner = "1"
        if a.item.is_training:
            a.item.load_outputs()
            good = expected_winner(a)
            winner = good if right else {"1": "2", "2": "1"}[good]
        resp = self._post(f"rate/{a.token}/submit/?next=1", {"answers": pair_answers(winner)})
        assert resp.status_code == 200, resp.content.decode()[:300]
        return resp.json()["next"]

    def through_training(self) -> dict:
        state = self.state()
        while state["state"] == "training":
            state = self.answer(state, right=True)
        return state

    def rate(self, n: int) -> dict:
        """Rate up to `n` regular items; the state after the last one."""
        state = self.state()
        for _ in range(n):
            if state["state"] != "rate":
                break
            state = self.answer(state)
        return state

    def to_rating(self) -> dict:
        self.consent()
        self.pre()
        self.instructions()
        return self.through_training()

    def page(self) -> str:
        resp = self.client.get(f"/studies/{self.study.slug}/rate/")
        assert resp.status_code == 200, resp.content.decode()[:300]
        return resp.content.decode()
