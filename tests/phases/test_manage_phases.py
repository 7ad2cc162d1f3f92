"""The Manage page sets a study's phases from YAML/JSON (checked whole, logged) and gives the
answers as a table; only admins reach either."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.models import StudyChange
from annotation.questionnaires import phases_dump
from tests.phases.conftest import PHASES, enter

pytestmark = pytest.mark.django_db


def test_admin_sets_phases_as_yaml_or_json_checked_whole(crowd_study, client_for, admin_user, annotator):
    admin = client_for(admin_user)
    url = f"/studies/{crowd_study.slug}/phases/"
    bad = admin.post(url, {"phases": "pre_questionnaire: {questions: [{key: age, text: Age, kind: number}]}"})
    assert bad.status_code == 400 and "pre_questionnaire.questions[0]" in bad.content.decode()
    assert "needs min and max" in bad.content.decode()
    crowd_study.refresh_from_db()
    assert crowd_study.phases == {}  # nothing half-stored
    assert admin.post(url, {"phases": json.dumps(PHASES)}).status_code == 302
    crowd_study.refresh_from_db()
    assert crowd_study.phases == PHASES
    assert StudyChange.objects.filter(study=crowd_study, field="participant phases").count() == 1
    page = admin.get(f"/studies/{crowd_study.slug}/manage/").content.decode()
    assert "reject_after_failed: 2" in page  # shown back as YAML to edit
    assert admin.post(url, {"phases": phases_dump(PHASES)}).status_code == 302
    assert StudyChange.objects.filter(study=crowd_study, field="participant phases").count() == 1  # unchanged
    assert client_for(annotator).post(url, {"phases": ""}).status_code in (403, 404)
    assert client_for(annotator).get(f"/studies/{crowd_study.slug}/phases/answers.csv").status_code in (403, 404)


def test_answers_download_as_one_row_per_participant(crowd_study, link, client_for, admin_user):
    crowd_study.phases = PHASES
    crowd_study.save(update_fields=["phases"])
    a = enter(link, "pa")
    a.post(f"/studies/{crowd_study.slug}/rate/consent/", {"agree": "yes"})
    bad = a.post(f"/studies/{crowd_study.slug}/rate/questionnaire/pre/", {"q_native": "yes", "q_age": "7"})
    assert bad.status_code == 400 and "between 18 and 99" in bad.content.decode()
    a.post(f"/studies/{crowd_study.slug}/rate/questionnaire/pre/",
           {"q_native": "yes", "q_age": "30", "q_langs": ["English", "French"]})
    b = enter(link, "pb")
    b.post(f"/studies/{crowd_study.slug}/rate/consent/", {"agree": "no"})
    resp = client_for(admin_user).get(f"/studies/{crowd_study.slug}/phases/answers.csv")
    rows = {r["participant_id"]: r for r in csv.DictReader(io.StringIO(resp.content.decode()))}
    assert rows["pa"]["consent"] == "agreed" and rows["pa"]["pre.native"] == "yes" and rows["pa"]["pre.age"] == "30"
    assert rows["pa"]["pre.langs"] == "English; French" and rows["pa"]["post.difficulty"] == ""
    assert rows["pb"]["consent"] == "declined" and rows["pb"]["pre.native"] == ""
