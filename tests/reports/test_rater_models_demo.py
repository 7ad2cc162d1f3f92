"""The demo's simulated raters include a spammer and a strict rater, and the report's rater models find
them (and no ordinary rater) in a study simulated as the demo makes it."""

from __future__ import annotations

import pytest

from annotation.demo import KNOBS, N_ITEMS, N_SIM_RATERS, STYLED_RATERS
from annotation.reports.study import study_report
from annotation.simulation.latent import SPAMMER, STRICT, styled
from annotation.simulation.study import simulated_study_create


def test_a_style_changes_only_what_it_says():
    names = dict(seed=1, who="rater-4", item_id="it-1", position=0, criterion="fluency")
    assert styled(0.3, "", **names) == 0.3
    assert styled(0.3, STRICT, **names) == pytest.approx(0.3 - 1.5)
    spam = [styled(z, SPAMMER, **names) for z in (-3.0, 0.0, 3.0)]
    assert spam[0] == spam[1] == spam[2]  # what the output is worth changes nothing
    with pytest.raises(ValueError, match="unknown rater style 'lazy'"):
        styled(0.0, "lazy", **names)


@pytest.mark.django_db
def test_the_demo_study_opens_with_the_spammer_and_the_strict_rater_found(admin_user):
    sim = simulated_study_create(preset="rrgen-001", slug="styled-rrgen", n_items=N_ITEMS,
                                 n_raters=N_SIM_RATERS + len(STYLED_RATERS), seed=1, knobs=KNOBS,
                                 styles=STYLED_RATERS, admin=admin_user, rater_prefix="styled")
    section = study_report(sim.study, n_boot=20)["rater_models"]
    flagged = {r["rater"]: " ".join(r["reasons"]) for r in section["to_check"]}
    spammer, strict = (f"styled-{k[len('rater-'):]}" for k in STYLED_RATERS)
    assert spammer in flagged and strict in flagged, flagged
    assert not {f"styled-{k}" for k in range(1, N_SIM_RATERS + 1)} & set(flagged), flagged
    assert "decision:" in flagged[spammer]  # found on the labels, not only on the scales
    assert "strict by" in flagged[strict]
