"""The Python client carries what was rated, the modelled consensus with its posteriors and each rater's
estimates, as typed DataFrames from the live server."""

from __future__ import annotations

import pandas as pd
import pytest

from annotation.models import Output
from annotation.reports.rater_models import study_rater_models
from annotation.simulation.latent import SPAMMER, STRICT
from annotation.simulation.study import simulated_study_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_items_consensus_and_rater_estimates_as_dataframes(concord, admin_user):
    sim = simulated_study_create(preset="rrgen-001", slug="client-models", n_items=4, n_raters=4, seed=5,
                                 styles={"rater-3": SPAMMER, "rater-4": STRICT})
    client = concord(admin_user)

    items = client.items("client-models")
    stored = Output.objects.filter(item__study=sim.study).order_by("item_id", "position")
    assert list(items["content"]) == [o.content for o in stored] and len(items) == 4 * 3
    assert pd.api.types.is_integer_dtype(items["output"]) and set(items["kind"]) == {"text"}

    consensus = client.consensus("client-models")
    decision = consensus[consensus["criterion"] == "decision"]
    models = study_rater_models(sim.study)
    assert len(decision) == 4 * 3 and set(decision["method"]) == {models["labels"]["decision"]["method"]}
    assert decision["posterior"].between(0.5, 1).all() and set(decision["label"]) <= {"ACCEPT", "REJECT"}
    assert consensus["posterior"].dtype == "float64"

    estimates = client.rater_estimates("client-models")
    assert len(estimates) == len(models["raters"]) and set(estimates["rater"]) == {u.username for u in sim.raters}
    strict = estimates[(estimates["rater"] == sim.raters[3].username) & (estimates["criterion"] == "fluency")]
    others = estimates[(estimates["rater"] != sim.raters[3].username) & (estimates["criterion"] == "fluency")]
    assert strict["bias"].iloc[0] < others["bias"].min()  # the strict rater's bias, as the model has it
