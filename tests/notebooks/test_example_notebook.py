"""docs/notebooks/demo-study.ipynb, executed against a live server holding a demo study (as `make run` makes it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from annotation.models import Rating
from annotation.demo import JUDGE_KNOBS, KNOBS, N_ITEMS, N_SIM_RATERS, N_UNRATED
from annotation.simulation.study import simulated_study_create
from judges.models import JudgeScore
from judges.simulation import simulated_judges_run

pytestmark = pytest.mark.django_db(transaction=True)
NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "demo-study.ipynb"


def test_the_notebook_runs_on_the_demo(live_server, admin_user, token_for, monkeypatch, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    sim = simulated_study_create(preset="rrgen-001", slug="demo-rrgen-001", n_items=N_ITEMS, n_raters=N_SIM_RATERS,
                                 seed=1, knobs=KNOBS, unrated_items=N_UNRATED, rater_prefix="demo-rater")
    runs = simulated_judges_run(study=sim.study, preset="rrgen-001", n_judges=1, knobs=JUDGE_KNOBS, seed=1,
                                worker="no")
    assert runs[0].status == "done"
    monkeypatch.setenv("CONCORD_URL", live_server.url)
    monkeypatch.setenv("CONCORD_TOKEN", token_for(admin_user))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parents[2])}}).execute()

    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2  # the systems plot and the judge scatter
    # what the last cell printed: the kernel may send it in several stream messages (its newline apart)
    summary = json.loads("".join(o["text"] for o in notebook.cells[-1].outputs if o.output_type == "stream"))
    assert summary["alpha"] == pytest.approx(summary["alpha_reported"], abs=1e-9)
    assert summary["judge"] == runs[0].config["name"]
    rated = set(Rating.objects.filter(assignment__study=sim.study, criterion="fluency", assignment__ignored=False,
                                      assignment__is_attention_check=False).values_list("output_id", flat=True))
    judged = set(JudgeScore.objects.filter(run=runs[0], criterion="fluency", status="scored")
                 .values_list("output_id", flat=True))
    assert summary["outputs_paired"] == len(rated & judged) > N_ITEMS  # 3 responses per item, a few unparsed
    assert summary["judge_pearson"] > 0.3  # the simulated judge follows the same latent quality as the raters
    if os.environ.get("CONCORD_WRITE_NOTEBOOK"):  # refresh the committed outputs: CONCORD_WRITE_NOTEBOOK=1 pytest …
        nbformat.write(notebook, NOTEBOOK)
