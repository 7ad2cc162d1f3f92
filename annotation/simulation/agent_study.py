"""The simulated agent study: the trajectories of annotation.simulation.agent imported into a study and
rated by simulated raters (a module of its own, so that the trajectory simulation imports no rater code)."""

from __future__ import annotations

import json

from annotation.models import Study, StudyMember
from annotation.services.items import items_import
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.simulation.agent import AGENT_RUBRIC, PRESET, agent_item
from annotation.simulation.latent import Knobs
from annotation.simulation.raters import simulate_ratings
from annotation.simulation.study import SimulatedStudy, rater_accounts
from rubrics.services import rubric_version_create


def agent_study_create(*, slug: str, admin, n_items: int = 8, n_raters: int = 3, seed: int = 0,
                       knobs: Knobs = Knobs(), raters_per_item: int | None = None, rater_prefix: str = "sim-rater",
                       name: str = "Demo: agent trajectories"):
    """Create, fill and open the agent study, and let `n_raters` simulated raters rate it."""
    version, _created = rubric_version_create(data=AGENT_RUBRIC)
    study = study_create(name=name, slug=slug, rubric_version=version, user=admin,
                         presentation=Study.Presentation.SIDE_BY_SIDE, raters_per_item=raters_per_item or n_raters,
                         instructions=AGENT_RUBRIC["description"])
    rows = [agent_item(seed, i) for i in range(n_items)]
    items_import(study=study, text="\n".join(json.dumps(r) for r in rows), filename="agent.jsonl")
    raters = rater_accounts(n_raters, rater_prefix)
    study_members_add(study=study, usernames=[u.username for u in raters], role=StudyMember.Role.ANNOTATOR)
    study_set_status(study=study, status=Study.Status.OPEN)
    submits = simulate_ratings(study=study, raters=raters, preset=PRESET, knobs=knobs, seed=seed)
    return SimulatedStudy(study, raters, submits)
