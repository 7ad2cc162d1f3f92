"""The demo's sampled agent traffic (issue 56 §2; docs/how-to/traces-to-report.md): simulated runs of the
demo agent sent through the OTLP intake's own path under the study's sampling rule (every run an evaluator
marked unacceptable, a quarter of the rest), so that its items carry their inclusion probabilities and the
items download its `trace_sampling` and `inclusion_probability` columns. Open and unrated, for the demo
annotators; the slug does not start with "demo-" (the report walks over the simulated studies leave it out)."""

from __future__ import annotations

from annotation.models import Study, StudyMember
from annotation.services.studies import study_create, study_members_add, study_set_status
from annotation.simulation.agent import AGENT_RUBRIC
from annotation.simulation.agent_traffic import traffic_spans
from annotation.traces.ingest import ingest_spans
from annotation.traces.sampling import SamplingRule
from rubrics.services import rubric_version_create

TRAFFIC_SLUG = "agent-traffic"
N_RUNS = 40
RULE = {"rate": 0.25, "flags": ["unacceptable"]}
# The seed whose draw shows the rule plainly: 11 runs marked unacceptable, 7 of the other 29 drawn (24%).
SEED = 54


def demo_traffic_install(*, admin, annotators: list[str], researchers: list[str], seed: int = SEED) -> Study | None:
    """Create the study when missing (idempotent, like the rest of the demo); returns it when created."""
    if Study.objects.filter(slug=TRAFFIC_SLUG).exists():
        return None
    version, _created = rubric_version_create(data=AGENT_RUBRIC)
    study = study_create(name="Demo: agent traffic, sampled for review", slug=TRAFFIC_SLUG, rubric_version=version,
                         user=admin, raters_per_item=2, trace_sampling=RULE,
                         instructions=AGENT_RUBRIC["description"])
    result = ingest_spans(study, traffic_spans(seed, N_RUNS), SamplingRule.stored(study.trace_sampling))
    if result.messages:
        raise RuntimeError(f"the demo traffic did not import: {'; '.join(result.messages)}")
    for usernames, role in ((annotators, StudyMember.Role.ANNOTATOR), (researchers, StudyMember.Role.RESEARCHER)):
        if usernames:
            study_members_add(study=study, usernames=usernames, role=role)
    study_set_status(study=study, status=Study.Status.OPEN)
    return study
