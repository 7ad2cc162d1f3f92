"""The comparative presets (compare-pairwise, compare-ranking) through every researcher page and
export, on simulated data: each answers 200 and holds the comparative ratings (item-level rows
whose value is the stored comparison), and an annotator sees no system names."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Rating, StudyMember
from annotation.simulation.items import COMPARE_PRESETS, SYSTEMS
from annotation.simulation.study import simulated_study_create
from tests.conftest import make_user
from tests.protocols.conftest import csv_rows

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture(params=COMPARE_PRESETS)
def simulated(request, admin_user):
    preset = request.param
    sim = simulated_study_create(preset=preset, slug=f"t-{preset}", n_items=6, n_raters=3, admin=admin_user)
    return preset, sim.study


def test_every_page_and_export_answers(simulated, admin_user):
    preset, study = simulated
    comparative = Rating.objects.filter(assignment__study=study, output=None)
    assert comparative.count() > 0
    client = _client(admin_user)
    for name in ("report", "items-page", "progress-page", "datasets"):
        response = client.get(reverse(name, args=[study.slug]))
        assert response.status_code == 200, name
    report = json.loads(_body(client.get(reverse("report", args=[study.slug]), {"download": "json"})))
    assert report
    rows = csv_rows(_body(client.get(reverse("dataset-export", args=[study.slug, "csv"]))))
    item_level = [r for r in rows if r["output"] == ""]
    assert len(item_level) == comparative.count()
    shown = json.loads(item_level[0]["value"])["shown"]
    assert len(shown) in (2, 4)
    jsonl = [json.loads(line) for line in _body(client.get(reverse("dataset-export", args=[study.slug, "jsonl"])))
             .splitlines() if line.strip()]
    assert len(jsonl) == len(rows)
    table = pq.read_table(io.BytesIO(_body(client.get(reverse("dataset-export", args=[study.slug, "parquet"])))))
    assert table.num_rows == len(rows)
    for fmt in ("pairs", "consensus"):
        assert client.get(reverse("dataset-export", args=[study.slug, fmt])).status_code == 200, fmt


def test_an_annotator_sees_no_system_names(simulated):
    preset, study = simulated
    rater = make_user(f"fresh-{preset}")
    StudyMember.objects.create(study=study, user=rater, role="annotator")
    study.raters_per_item = 4
    study.save(update_fields=["raters_per_item"])
    client = _client(rater)
    page = client.get(reverse("workspace", args=[study.slug]), follow=True)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Response 1" in html
    for system in SYSTEMS[preset]:
        assert system not in html
