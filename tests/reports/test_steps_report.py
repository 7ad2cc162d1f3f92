"""Issue 56 §1/§4: the report's per-step agreement (criterion x step kind) on a simulated agent study,
checked against the `krippendorff` package on the same ratings and against the planted truth."""

from __future__ import annotations

from collections import defaultdict

import krippendorff
import numpy as np
import pytest

from annotation.models import Rating
from annotation.reports.steps import step_map, steps_section
from annotation.reports.study import report_csv_rows, study_report
from annotation.simulation.agent_study import agent_study_create
from annotation.simulation.latent import Knobs

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(admin_user):
    return agent_study_create(slug="agents", admin=admin_user, n_items=6, n_raters=3, seed=4,
                              knobs=Knobs(noise=0.6, rater_bias=0.2)).study


def _reference_alpha(study, key: str, kind: str) -> float:
    """Alpha from the `krippendorff` package over (output, step) units of one criterion and step kind."""
    kinds = {(r["item"], r["output"], r["step"]): r["kind"] for r in step_map(study)}
    units: dict[tuple, dict[int, float]] = defaultdict(dict)
    for rater, output_id, item, position, criterion, value in Rating.objects.filter(
            assignment__study=study, criterion__startswith=f"{key}@").values_list(
            "assignment__rater_id", "output_id", "output__item__external_id", "output__position", "criterion", "value"):
        step = criterion.split("@")[1]
        if kinds[(item, position, step)] == kind:
            units[(item, output_id, step)][rater] = 1.0 if value == "yes" else 0.0
    raters = sorted({r for u in units.values() for r in u})
    data = np.array([[u.get(r, np.nan) for u in units.values()] for r in raters])
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


def test_per_step_agreement_matches_the_reference_and_the_truth(agent):
    section = steps_section(agent)
    assert set(section) == {"call_needed", "turn_helpful"}
    calls = section["call_needed"]["by_step_kind"]["tool_call"]
    turns = section["turn_helpful"]["by_step_kind"]["assistant"]
    for key, kind, entry in (("call_needed", "tool_call", calls), ("turn_helpful", "assistant", turns)):
        assert entry["n_raters"] == 3 and entry["n_ratings"] == 3 * entry["n_units"]
        assert entry["alpha"]["value"] == pytest.approx(_reference_alpha(agent, key, kind), abs=1e-9)
    # Planted truth: the weaker agent makes needless calls and answers unsupported; raters see it.
    answers = calls["answers_by_system"]
    assert answers["agent-llama-3.1-70b"].get("no", 0) > answers["agent-gpt-4o"].get("no", 0)


def test_the_report_carries_the_section_and_its_csv_rows(agent):
    report = study_report(agent, n_boot=20)
    assert report["steps"]["call_needed"]["by_step_kind"]["tool_call"]["n_units"] > 0
    assert "task_success" in report["agreement"]  # whole-trajectory criteria as before
    rows = [r for r in report_csv_rows(report) if r[0] == "steps"]
    assert ["steps", "call_needed", "tool_call", "krippendorff_alpha_nominal"] == rows[0][:4]


def test_the_step_map_carries_source_ids(agent):
    rows = step_map(agent)
    call = next(r for r in rows if r["kind"] == "tool_call")
    assert call["step"].startswith("m2.t") and call["tool_call_id"].startswith("call_") and len(call["span_id"]) == 16
    assert len(call["trace_id"]) == 32


def test_the_report_page_shows_the_section_and_the_step_map_downloads(agent, admin_user, client_for):
    client = client_for(admin_user)
    page = client.get(f"/studies/{agent.slug}/report/").content.decode()
    assert 'id="steps"' in page and "Per-step agreement" in page and "?download=steps" in page
    response = client.get(f"/studies/{agent.slug}/report/?download=steps")
    assert response.status_code == 200 and response["Content-Disposition"].endswith('-steps.csv"')
    lines = response.content.decode().splitlines()
    assert lines[0] == "item,output,system,step,kind,number,tool,tool_call_id,span_id,trace_id"
    assert len(lines) - 1 == len(step_map(agent)) and any(",tool_call," in line for line in lines)


def test_the_simulated_raters_highlight_the_unsupported_answers(agent):
    """The demo's agent study shows highlights inside a turn: raters mark the unsupported answer's first
    sentence in that step (offsets into its text) when they see it through their noise; nothing else."""
    from annotation.models import Output
    from annotation.step_questions import text_of

    marked = list(Rating.objects.filter(assignment__study=agent, criterion__startswith="unsupported@")
                  .select_related("output"))
    assert marked
    planted = 0
    for rating in marked:
        (span,) = rating.value
        text = text_of(rating.output.content, rating.criterion.split("@")[1])
        assert text[span["start"]:span["end"]] == span["text"] and span["label"] == "unsupported claim"
        planted += rating.criterion in (rating.output.metadata.get("truth") or {})
    assert planted == len(marked)
    unsupported = sum("unsupported@" in " ".join(o.metadata.get("truth", {}))
                      for o in Output.objects.filter(item__study=agent))
    assert unsupported > 0


def test_the_report_counts_the_highlights_inside_steps(agent, admin_user, client_for):
    """Per step kind and system: the steps raters marked, the highlights, the raters who marked any; the
    same counts recomputed from the stored ratings; on the page and in the report CSV."""
    from annotation.models import Output

    report = study_report(agent, n_boot=20)
    section = report["step_highlights"]["unsupported"]
    assert "unsupported" not in report["steps"]  # no agreement figure for highlights
    expected: dict = defaultdict(lambda: {"steps": set(), "highlights": 0, "raters": set()})
    systems = dict(Output.objects.filter(item__study=agent).values_list("pk", "system"))
    for rater, output_id, criterion, value in Rating.objects.filter(
            assignment__study=agent, criterion__startswith="unsupported@").values_list(
            "assignment__rater_id", "output_id", "criterion", "value"):
        cell = expected[systems[output_id]]
        cell["steps"].add((output_id, criterion))
        cell["highlights"] += len(value)
        cell["raters"].add(rater)
    assert section["by_step_kind"]["assistant"] == {
        s: {"steps_marked": len(c["steps"]), "highlights": c["highlights"], "raters": len(c["raters"])}
        for s, c in expected.items()}
    rows = [r for r in report_csv_rows(report) if r[0] == "highlights"]
    assert rows and rows[0][:2] == ["highlights", "unsupported"] and rows[0][3] == "steps_marked"
    page = client_for(admin_user).get(f"/studies/{agent.slug}/report/").content.decode()
    assert "Highlights inside steps" in page
