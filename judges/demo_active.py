"""The demo's active_inference study (issue 58 §1, §5; docs/how-to/sampling-policies.md): feedback texts
scored by three simulated judges, whose disagreement draws the items the demo annotators rate. Round 0
(the uniform pilot) is drawn here from a fixed seed, so the demo is the same on every machine; later rounds
draw themselves as the pilot is rated (judges.tasks.active_draw_next). Its slug does not start with
"demo-", like the other policy studies."""

from __future__ import annotations

import json

from annotation.demo import KNOBS
from annotation.demo_accounts import ANNOTATORS
from annotation.models import Study, StudyMember
from annotation.services.active_inference import active_draw
from annotation.services.items import items_import
from annotation.services.studies import study_create, study_members_add, study_set_status, study_settings_update
from annotation.simulation.items import items_for
from judges.selectors import study_jury
from judges.simulation import simulated_judges_run

SLUG, SOURCE, PRESET = "policy-active-inference", "demo-feedback-000", "feedback-000"
N_ITEMS = 24
POLICY = {"name": "active_inference", "budget": 8, "pilot": 0.25, "rounds": 3}


def demo_active_install(*, admin) -> Study | None:
    """Create the study when missing (idempotent); returns it when created."""
    if Study.objects.filter(slug=SLUG).exists() or not Study.objects.filter(slug=SOURCE).exists():
        return None
    # The policy is set once the judges have scored: set before, the end of their runs would ask a running
    # worker (make run's) to draw the pilot with its own randomness, and the demo would differ from machine
    # to machine; the pilot is drawn below, from seed 58.
    study = study_create(name="Demo: humans where the judges are unsure", slug=SLUG, user=admin, raters_per_item=1,
                         rubric_version=Study.objects.get(slug=SOURCE).rubric_version)
    items_import(study=study, text="".join(json.dumps(r) + "\n" for r in items_for(PRESET, N_ITEMS, seed=58)),
                 filename=f"{SLUG}.jsonl")
    study_members_add(study=study, usernames=ANNOTATORS, role=StudyMember.Role.ANNOTATOR)
    study_members_add(study=study, usernames=["researcher"], role=StudyMember.Role.RESEARCHER)
    simulated_judges_run(study=study, preset=PRESET, n_judges=3, knobs=KNOBS, seed=58)
    study_settings_update(study=study, user=admin, changes={"sampling_policy": POLICY}, confirmed=True)
    study.refresh_from_db()
    active_draw(study=study, jury=study_jury(study), seed=58, round_no=0)
    study_set_status(study=study, status=Study.Status.OPEN)
    return study
