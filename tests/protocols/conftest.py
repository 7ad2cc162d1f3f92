"""Simulated studies for the protocol tests.

`simulated` builds one study per seed preset ONCE for the module (committed, so the report,
export and judge pages read them like any other study) and removes them afterwards. Judge
chunks and release builds run in-process through Celery's eager mode, the path `simulate_study`
takes when no worker listens.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model

from annotation.simulation.items import PRESETS
from annotation.simulation.latent import Knobs

MATRIX_KNOBS = Knobs(noise=0.5, rater_bias=0.3, position_bias=0.3, malformed=0.1)
N_ITEMS = 10


def _cleanup(prefix: str) -> None:
    from annotation.models import DatasetRelease, Study
    from judges.models import JudgeConfig

    DatasetRelease.objects.filter(study__slug__startswith=prefix).delete()  # releases protect their study
    Study.objects.filter(slug__startswith=prefix).delete()
    JudgeConfig.objects.filter(name__startswith=prefix).delete()
    get_user_model().objects.filter(username__startswith=prefix).delete()


@pytest.fixture(scope="module")
def simulated(django_db_setup, django_db_blocker):
    """preset -> (study, researcher, admin): rated by 3 simulated raters, judged by 2 judges, released."""
    from annotation.datasets import FORMATS
    from annotation.datasets.releases import releases_create
    from annotation.services.studies import study_members_add
    from annotation.simulation.study import simulated_study_create
    from judges.simulation import eager_celery, simulated_judges_run

    from rubrics.models import Rubric

    prefix = "matrix-"
    with django_db_blocker.unblock():
        _cleanup(prefix)
        rubrics_before = set(Rubric.objects.values_list("pk", flat=True))
        users = get_user_model().objects
        admin = users.create_user(username=f"{prefix}admin", password="x", is_staff=True, is_superuser=True)
        researcher = users.create_user(username=f"{prefix}researcher", password="x")
        out = {}
        for seed, preset in enumerate(PRESETS):
            sim = simulated_study_create(preset=preset, slug=f"{prefix}{preset}", n_items=N_ITEMS, n_raters=3,
                                         seed=seed, knobs=MATRIX_KNOBS, admin=admin, rater_prefix=f"{prefix}rater")
            study_members_add(study=sim.study, usernames=[researcher.username], role="researcher")
            runs = simulated_judges_run(study=sim.study, preset=preset, n_judges=2, knobs=MATRIX_KNOBS, seed=seed,
                                        worker="no")
            assert [r.status for r in runs] == ["done", "done"], [r.error for r in runs]
            with eager_celery():
                releases_create(study=sim.study, version="1.0.0", formats=list(FORMATS), changelog="matrix",
                                license="cc-by-4.0")
            out[preset] = (sim.study, researcher, admin)
    yield out
    with django_db_blocker.unblock():
        _cleanup(prefix)
        # Leave the database as the other modules expect it: without the presets installed here.
        Rubric.objects.exclude(pk__in=rubrics_before).delete()


def csv_rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
