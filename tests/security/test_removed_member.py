"""Issue 39's cases, request by request: a researcher removed from a study read its report,
progress, datasets and judge runs, downloaded the API export (with panel ids) and created releases;
a crowd participant read the API schema. Now each is refused, and added again the researcher reads
again."""

import pytest

from annotation.models import DatasetRelease
from annotation.services.members import MemberRow, member_remove, members_add

pytestmark = pytest.mark.django_db


def readers_requests(slug: str, run: int) -> list[str]:
    return [f"/studies/{slug}/report/", f"/studies/{slug}/report/?download=csv", f"/studies/{slug}/progress/",
            f"/studies/{slug}/datasets/", f"/studies/{slug}/datasets/export/csv/", f"/judges/studies/{slug}/",
            f"/judges/runs/{run}/progress/", f"/api/judges/runs/{run}/", f"/api/studies/{slug}/",
            f"/api/studies/{slug}/progress/", f"/api/studies/{slug}/export/?file=csv", f"/api/studies/{slug}/report/",
            f"/api/studies/{slug}/releases/", f"/api/judges/studies/{slug}/scores/"]


def test_a_removed_researcher_reads_nothing_and_added_again_reads(make_study, researcher, client_for):
    from judges.models import JudgeRun

    study = make_study("rrgen-001", researchers=[researcher])
    run = JudgeRun.objects.create(study=study, config={}, criteria=[], status="done").pk
    client = client_for(researcher)
    assert {url: client.get(url).status_code for url in readers_requests(study.slug, run)} == \
        {url: 200 for url in readers_requests(study.slug, run)}

    member_remove(study=study, user_id=researcher.pk)
    assert {url: client.get(url).status_code for url in readers_requests(study.slug, run)} == \
        {url: 404 for url in readers_requests(study.slug, run)}
    release = client.post(f"/api/studies/{study.slug}/releases/", {"version": "1.0.0", "formats": ["csv"]},
                          content_type="application/json")
    assert release.status_code == 404 and not DatasetRelease.objects.exists()
    assert client.get("/api/judges/runs/").json()["results"] == []

    members_add(study=study, rows=[MemberRow(None, researcher.username)], role="researcher")
    assert client.get(f"/studies/{study.slug}/report/").status_code == 200
    assert client.get(f"/api/judges/runs/{run}/").status_code == 200


def test_a_crowd_participant_does_not_read_the_api_schema(make_study, admin_user, researcher, client_for):
    from annotation.services.crowd import crowd_enter, crowd_link_create

    study = make_study("rrgen-001", researchers=[researcher])
    link = crowd_link_create(study=study, user=admin_user, provider="prolific", completion_code="C0DE")
    participant = crowd_enter(token=link.token, params={"PROLIFIC_PID": "schema-pid", "SESSION_ID": "s"}).user
    assert client_for(participant).get("/api/schema/").status_code == 403
    assert client_for(participant).get("/api/docs/").status_code == 403
    assert client_for(researcher).get("/api/schema/").status_code == 200
