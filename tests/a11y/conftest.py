"""A site with a simulated study per preset (ratings, so reports are full), members in every role,
an invitation, a Prolific crowd link with a training item, and a study with every participant phase."""

from __future__ import annotations

import json

import pytest

from tests.a11y.inventory import MAIN, PRESETS
from tests.ui.conftest import page_at  # noqa: F401  (a page at a given width)

TRAINING_ITEM = {
    "id": "a11y-train-1", "context": "How do I reset my router?", "training": True,
    "explanation": "Response 1 gives the steps; Response 2 only restates the question.",
    "gold": {"preference": ["helpful-bot", "vague-bot"]},
    "outputs": [{"system": "helpful-bot", "content": "Unplug it for 30 seconds, then hold reset for 10."},
                {"system": "vague-bot", "content": "You want to reset your router."}],
}


@pytest.fixture
def site(db, admin_user, annotator, researcher):
    from annotation.demo import CROWD_PHASES
    from annotation.models import Assignment, Study
    from annotation.services.crowd import crowd_link_create
    from annotation.services.invitations import invitation_create
    from annotation.services.items import items_import
    from annotation.services.phases import study_phases_update
    from annotation.services.studies import study_members_add
    from annotation.simulation.study import simulated_study_create

    slugs, items = {}, {}
    for preset in PRESETS:
        study = simulated_study_create(preset=preset, slug=f"a11y-{preset}", n_items=3, n_raters=2, seed=1,
                                       unrated_items=2, admin=admin_user).study
        study_members_add(study=study, usernames=[annotator.username], role="annotator")
        study_members_add(study=study, usernames=[researcher.username], role="researcher")
        slugs[preset] = study.slug
        items[preset] = study.items.order_by("pk").values_list("pk", flat=True).first()
    crowd_study = Study.objects.get(slug=slugs["compare-pairwise"])
    items_import(study=crowd_study, text=json.dumps(TRAINING_ITEM) + "\n", filename="training.jsonl")
    crowd_study.training_pass_mark = 0.5
    crowd_study.save(update_fields=["training_pass_mark"])
    link = crowd_link_create(study=crowd_study, user=admin_user, provider="prolific", completion_code="A11Y-OK",
                             items_per_participant=1, time_limit_minutes=30)
    phases = simulated_study_create(preset="compare-pairwise", slug="a11y-phases", n_items=2, n_raters=1, seed=2,
                                    admin=admin_user).study
    study_phases_update(study=phases, user=admin_user, text=json.dumps(CROWD_PHASES))  # also an audit log entry
    participant = Assignment.objects.filter(study__slug=slugs[MAIN]).values_list("rater_id", flat=True).first()
    invitation = invitation_create(study=Study.objects.get(slug=slugs[MAIN]), user=admin_user, days=7, max_uses=None)
    return {"slugs": slugs, "items": items, "crowd": link.token, "invitation": invitation.token,
            "phases": phases.slug, "participant": participant,
            "users": {"admin": admin_user, "researcher": researcher, "annotator": annotator}}
