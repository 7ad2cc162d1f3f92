"""The demo's participants' data: a Prolific participant rated, was downloaded and erased; the audit
log shows each step, and a second run adds nothing."""

from __future__ import annotations

from annotation.models import Assignment, AuditEntry, CrowdParticipant, ParticipantErasure
from annotation.simulation.items import PRESETS


def test_demo_shows_an_erasure_in_the_audit_log(db, admin_user):
    from annotation.demo import KNOBS
    from annotation.demo_participants import demo_participant_erasure
    from annotation.simulation.study import simulated_study_create

    sim = simulated_study_create(preset=PRESETS[0], slug=f"demo-{PRESETS[0]}", n_items=4, n_raters=2, knobs=KNOBS,
                                 raters_per_item=3, admin=admin_user)
    before = Assignment.objects.filter(study=sim.study).count()
    demo_participant_erasure(admin_user, knobs=KNOBS)
    erasure = ParticipantErasure.objects.get(study=sim.study)
    assert erasure.mode == "delete" and erasure.ratings > 0 and erasure.by == admin_user
    assert Assignment.objects.filter(study=sim.study).count() == before  # their places went back
    assert not CrowdParticipant.objects.filter(participant_id__startswith="60a1").exists()
    actions = list(AuditEntry.objects.filter(study=sim.study, actor=admin_user).values_list("action", flat=True))
    assert actions[:3] == ["participant_erase", "participant_download", "setting_change"]
    assert not AuditEntry.objects.filter(target__contains="60a1").exists()  # the panel id is gone from the log
    demo_participant_erasure(admin_user, knobs=KNOBS)
    assert ParticipantErasure.objects.count() == 1
