"""Drives the planted study (tests/planted/truth.py) through the real routes, as people and the panel do:
each participant opens the crowd link with Prolific's ids, answers every phase through rate/next and
the phase endpoints, submits items through the submit API (with the planted time on task) and, on the
`left_midway` path, returns the task on the workspace's return route. Judge runs are started on the
judges page and scored by the real Celery worker against the loopback model server.

Only the answers are simulated (annotation.simulation: each rater perceives the outputs' true quality
with their kind's noise and bias); which item comes next, in which order, and everything stored is
the platform's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.test import Client

from annotation.models import Assignment, CrowdLink, Study
from annotation.simulation.latent import Knobs
from annotation.simulation.raters import rater_answers, value_for
from tests.phases.conftest import expected_winner, pair_answers
from tests.phases.walk import after_a_break
from tests.planted import truth

PRE = {"native_english": "yes", "ai_use": 4, "age": 30}
INSTRUCTIONS = {"length": "not necessarily"}
POST = {"difficulty": 3, "comments": ""}


@dataclass
class Participant:
    study: Study
    link: CrowdLink
    path: truth.Path
    client: Client = field(default_factory=Client)
    states: list[str] = field(default_factory=list)  # every state rate/next named, in order
    submitted: int = 0  # regular items

    # ------------------------------------------------------------------ the panel's side
    def enter(self) -> None:
        """Open the study URL as Prolific fills it in (a new browser session each time)."""
        self.client = Client()
        r = self.client.get(f"/crowd/{self.link.token}/", {"PROLIFIC_PID": self.path.pid, "STUDY_ID": "planted",
                                                             "SESSION_ID": f"s-{self.path.pid}"})
        assert r.status_code == 302, (self.path.pid, r.status_code, r.content[:300])

    # ------------------------------------------------------------------ the participant's API
    def api(self, path: str, body: dict | None = None, *, ok: tuple[int, ...] = (200,)) -> dict:
        r = self.client.post(f"/api/studies/{self.study.slug}/{path}", json.dumps(body or {}),
                             content_type="application/json")
        assert r.status_code in ok, (self.path.pid, path, r.status_code, r.content[:300])
        return r.json()

    def next(self) -> dict:
        state = self.api("rate/next/")
        self.states.append(state["state"])
        return state

    def through_instructions(self) -> dict:
        assert self.next()["state"] == "consent"
        self.api("consent/", {"agree": True})
        assert self.next()["state"] == "questionnaire"
        self.api("questionnaire/pre/", {"answers": PRE})
        assert self.next()["state"] == "instructions"
        self.api("instructions/", {"answers": INSTRUCTIONS})
        return self.next()

    def submit(self, token: str, answers: dict, seconds: float) -> dict:
        # As the workspace's client: the total time on this item, from what is stored (a retried training item)
        spent = Assignment.objects.get(token=token).time_on_task_ms + int(seconds * 1000)
        body = self.api(f"rate/{token}/submit/?next=1", {"answers": answers, "time_on_task_ms": spent})
        self.states.append(body["next"]["state"])
        return body["next"]

    def training(self, state: dict, *, right: bool) -> dict:
        while state["state"] == "training":
            a = Assignment.objects.get(token=state["assignment"]["token"])
            a.item.load_outputs()
            good = expected_winner(a)
            state = self.submit(str(a.token), pair_answers(good if right else {"1": "2", "2": "1"}[good]), 10)
        return state

    def rate(self, state: dict, *, limit: int | None = None) -> dict:
        """Answer items until `limit` regular items are submitted (None: until rating ends)."""
        kind = truth.KINDS[self.path.kind]
        while state["state"] == "rate" and (limit is None or self.submitted < limit):
            a = Assignment.objects.select_related("item").get(token=state["assignment"]["token"])
            answers = answer(a, kind, self.path.pid)
            state = self.submit(str(a.token), answers, truth.SECONDS_PER_ITEM[kind.name])
            self.submitted += not a.item.is_attention_check
        return state


def answer(a: Assignment, kind: truth.RaterKind, who: str) -> dict:
    """The rater kind's answers to one assignment, from the outputs in the order shown."""
    item = a.item
    by_position = {o.position: o for o in item.outputs.all()}
    shown = [by_position[p] for p in a.permutation]
    if item.is_attention_check:
        good = str([o.system for o in shown].index("check-good") + 1)
        if kind.style == "spammer":  # a spammer does not read: picks the poor answer
            return pair_answers({"1": "2", "2": "1"}[good])
        return pair_answers(good)
    answers = rater_answers(rubric=a.study.rubric, preset=truth.PRESET, item=item, shown=shown, who=who,
                            knobs=kind.knobs, seed=truth.SEED, style=kind.style)
    if kind.first_picker:
        answers["item"]["preference"] = {"value": {"winner": "1", "strength": "clearly"}, "reasoning": ""}
    return answers


def gold_rows(rows: list[dict]) -> list[dict]:
    """Each imported row with its planted gold: helpfulness per output, the preference per item."""
    criterion = {"key": "helpfulness", "kind": "likert", "min": 1, "max": 7}
    exact = Knobs(noise=0.0, rater_bias=0.0)
    out = []
    for row in rows:
        per_output = [value_for(criterion, seed=truth.SEED, preset=truth.PRESET, item_id=row["id"], position=pos,
                                system=o["system"], who="gold", knobs=exact, shown_first=False)
                      for pos, o in enumerate(row["outputs"])]
        best_first = [o["system"] for _, o in sorted(zip(truth_quality(row), row["outputs"]), key=lambda t: -t[0])]
        out.append({**row, "gold": {"helpfulness": per_output, "preference": best_first}})
    return out


def truth_quality(row: dict) -> list[float]:
    """Each output's true overall quality (what the comparative answers perceive before noise)."""
    from annotation.simulation.items import system_effect
    from annotation.simulation.latent import output_quality

    return [output_quality(truth.SEED, system_effect(truth.PRESET, o["system"]), row["id"], pos)
            for pos, o in enumerate(row["outputs"])]


def walk(p: Participant) -> None:
    """One participant's path (truth.PATHS) through the phases."""
    p.enter()
    steps = p.path.steps
    if steps == "declined":
        assert p.next()["state"] == "consent"
        p.api("consent/", {"agree": False})
        assert p.next()["state"] == "screened_out"
        return
    if steps == "consent_only":
        assert p.next()["state"] == "consent"
        p.api("consent/", {"agree": True})
        return  # closes the tab
    state = p.through_instructions()
    assert state["state"] == "training", state
    if steps == "failed_training":
        state = p.training(state, right=False)
        assert state["state"] == "training_failed", state
        state = p.training(p.api("training/retry/"), right=False)
        assert state["state"] == "screened_out", state
        return
    state = p.training(state, right=True)
    if steps == "left_midway":
        p.rate(state, limit=p.path.rated)
        r = p.client.post(f"/studies/{p.study.slug}/crowd/return/")
        assert r.status_code in (200, 302), r.status_code
        return
    if steps == "break":
        p.rate(state, limit=truth.N_ITEMS // 2)
        after_a_break(p.study, p.path.pid)  # sooner, the new browser is told the id is in use (409)
        p.enter()  # back after a break: the same link, a new browser
        state = p.next()
        assert state["state"] == "rate", state
    state = p.rate(state)
    assert state["state"] == "questionnaire" and state.get("which") == "post", state
    p.api("questionnaire/post/", {"answers": POST})
    assert p.next()["state"] == "done"
