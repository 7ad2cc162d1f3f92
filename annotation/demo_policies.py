"""The demo's two studies with a sampling policy (issue 58 §2, §3; docs/how-to/sampling-policies.md): RRGen
replies whose accept/reject decision gets as many raters as each needs (adaptive redundancy), and pairwise
answers whose pairs are chosen for what they tell about the ranking (active comparisons). Open and unrated,
so the demo annotators meet each policy in the workspace; no simulated raters, so load_demo stays fast.
Their slugs do not start with "demo-": the report walks over every simulated demo study leave them out."""

from __future__ import annotations

import json

from annotation.models import Study, StudyMember
from annotation.services.items import items_import
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.simulation.items import items_for

ADAPTIVE_SLUG, PAIRS_SLUG = "policy-adaptive-redundancy", "policy-active-pairs"
N_ITEMS = 10
ADAPTIVE = {"name": "adaptive_redundancy", "min_raters": 2, "max_raters": 5, "target": 0.9, "criterion": "decision"}
PAIRS = {"name": "active_pairs", "random_share": 0.2}


def demo_policies_install(*, admin, annotators: list[str], researchers: list[str]) -> list[Study]:
    """Create the two studies when missing (idempotent, like the rest of the demo); returns those created."""
    made = []
    for slug, source, preset, policy, name in (
            (ADAPTIVE_SLUG, "demo-rrgen-001", "rrgen-001", ADAPTIVE, "Demo: as many raters as each reply needs"),
            (PAIRS_SLUG, "demo-compare-pairwise", "compare-pairwise", PAIRS, "Demo: pairs that separate the systems")):
        if Study.objects.filter(slug=slug).exists():
            continue
        study = study_create(name=name, slug=slug, rubric_version=Study.objects.get(slug=source).rubric_version,
                             user=admin, sampling_policy=policy)
        items_import(study=study, text="".join(json.dumps(r) + "\n" for r in items_for(preset, N_ITEMS, seed=58)),
                     filename=f"{slug}.jsonl")
        study_members_add(study=study, usernames=annotators, role=StudyMember.Role.ANNOTATOR)
        study_members_add(study=study, usernames=researchers, role=StudyMember.Role.RESEARCHER)
        study_set_status(study=study, status=Study.Status.OPEN)
        made.append(study)
    return made
