"""The demo's participants' data (annotation.demo calls it): in the first seed study a Prolific
participant enters by a link, rates two items, and withdraws; the admin sets a retention period,
downloads the participant's data and erases it (delete: their places go back to the pool, so the
demo annotators keep room on every item). The audit log then shows each step.

Idempotent: a study with an erasure already is left as it is.
"""

from __future__ import annotations

from annotation.models import Study
from annotation.simulation.items import PRESETS

PARTICIPANT = {"PROLIFIC_PID": "60a1d3m0p4rt1c1p4nt", "STUDY_ID": "demo", "SESSION_ID": "demo-session-1"}
RATED = 2


def demo_participant_erasure(admin, *, knobs) -> None:
    from annotation.services.assignments import assignment_next
    from annotation.services.crowd import crowd_enter, crowd_link_create
    from annotation.services.participant_data import participant_erase
    from annotation.services.ratings import assignment_submit
    from annotation.services.studies import study_settings_update
    from annotation.simulation.raters import rater_answers
    from annotation.views.participants import participant_download

    study = Study.objects.filter(slug=f"demo-{PRESETS[0]}").first()
    if study is None or study.erasures.exists():
        return
    study_settings_update(study=study, user=admin, changes={"retention_days": 90})
    link = crowd_link_create(study=study, user=admin, provider="prolific", completion_code="DEMOPD01",
                             items_per_participant=RATED)
    participant = crowd_enter(token=link.token, params=PARTICIPANT)
    for _ in range(RATED):
        a = assignment_next(study=study, rater=participant.user)
        if a is None:
            break
        by_position = {o.position: o for o in a.item.outputs.all()}
        answers = rater_answers(rubric=study.rubric, preset=PRESETS[0], item=a.item, who="participant",
                                shown=[by_position[p] for p in a.permutation], knobs=knobs, seed=0)
        a.study = study
        assignment_submit(assignment=a, answers=answers, time_on_task_ms=42_000)
    participant_download(study=study, user_id=participant.user_id, fmt="json", actor=admin)
    participant_erase(study=study, user_id=participant.user_id, mode="delete", by=admin)
