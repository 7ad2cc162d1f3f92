"""A simulated study: a preset's study, synthetic items, rater accounts, and their ratings."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from annotation.models import Study, StudyMember
from annotation.services.items import items_import
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.simulation.items import items_for
from annotation.simulation.latent import Knobs
from annotation.simulation.raters import simulate_ratings, stable_pick_keys
from rubrics.loader import load_preset
from rubrics.services import rubric_presets_install

PRESENTATION = {"rrgen-001": Study.Presentation.SUCCESSION}


@dataclass
class SimulatedStudy:
    study: Study
    raters: list
    submits: int


def rater_accounts(n: int, prefix: str = "sim-rater") -> list:
    """`prefix-1` .. `prefix-n`, created when missing, without a usable password (nobody logs in as them)."""
    users = []
    for k in range(1, n + 1):
        user, created = get_user_model().objects.get_or_create(username=f"{prefix}-{k}")
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        users.append(user)
    return users


def simulated_study_create(*, preset: str, slug: str, n_items: int = 20, n_raters: int = 3, seed: int = 0,
                           knobs: Knobs = Knobs(), raters_per_item: int | None = None, admin=None,
                           name: str = "", rater_prefix: str = "sim-rater",
                           unrated_items: int = 0, styles: dict[str, str] | None = None) -> SimulatedStudy:
    """Create and open the study, import the synthetic items, and let `n_raters` rate every item they
    are given (raters_per_item defaults to n_raters: every rater rates every item). `unrated_items`
    more are imported after the raters are done: items only judges will score (as when a study grows
    after its human round; prediction-powered estimates need such items). `styles`: {"rater-k": latent.SPAMMER
    or latent.STRICT} for the k-th rater (from 1) when they are more than noisy."""
    if n_items < 1 or n_raters < 1:
        raise ValueError("a simulated study needs at least one item and one rater")
    versions = {v.rubric.slug: v for v in rubric_presets_install()}
    if preset not in versions:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(sorted(versions))}")
    info = load_preset(preset)
    study = study_create(
        name=name or f"Simulated: {info['name']}", slug=slug, rubric_version=versions[preset], user=admin,
        presentation=PRESENTATION.get(preset, Study.Presentation.SIDE_BY_SIDE),
        raters_per_item=raters_per_item or n_raters, instructions=info.get("description", ""),
    )
    rows = items_for(preset, n_items + unrated_items, seed)
    items_import(study=study, text="\n".join(json.dumps(r) for r in rows[:n_items]), filename="simulated.jsonl")
    stable_pick_keys(study, seed)
    raters = rater_accounts(n_raters, rater_prefix)
    study_members_add(study=study, usernames=[u.username for u in raters], role=StudyMember.Role.ANNOTATOR)
    study_set_status(study=study, status=Study.Status.OPEN)
    submits = simulate_ratings(study=study, raters=raters, preset=preset, knobs=knobs, seed=seed, styles=styles)
    if unrated_items:
        items_import(study=study, text="\n".join(json.dumps(r) for r in rows[n_items:]), filename="later.jsonl")
        stable_pick_keys(study, seed)
    return SimulatedStudy(study, raters, submits)
