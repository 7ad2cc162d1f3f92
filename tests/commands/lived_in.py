"""A lived-in demo database for the tests of the management commands and of the documented steps.

`load_demo` once per test run (about 28 s: it simulates every demo study, runs its judges and builds its
releases), its rows and files copied back for each later module (tests/demo_snapshot.py), then what a
database meets after some use: a stored rubric edited to a new version, a removed member, an erased
participant (kept pseudonymised), a closed study, a stored judge loaded from a file. Each test then runs in a transaction that is rolled back, so the tests of a module
share the demo and do not see each other's writes; the module's teardown empties the database again
for the tests that expect an empty one.
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command

from tests import demo_snapshot

EDITED_RUBRIC = "rrgen-001"
EDITED_DESCRIPTION = "how grammatically fluent the response reads (edited after the demo)"
CLOSED_STUDY = "demo-feedback-000"
ERASED_IN = "demo-codegen-002"
REMOVED_FROM = "demo-aqua-003"
STORED_JUDGE = "lived-in-vllm"


@dataclass
class LivedIn:
    demo_output: str  # what load_demo printed
    load_demo_s: float  # how long it took
    rubric_version: int  # EDITED_RUBRIC's version after the edit
    removed: str  # username removed from REMOVED_FROM
    erased: str  # pseudonym of the participant erased in ERASED_IN
    judge_file: Path


def live_in(tmp: Path, shared: Path | None = None) -> LivedIn:
    """Load the demo and use it a little; return what was done."""
    from django.contrib.auth import get_user_model

    from annotation.models import Study, StudyMember
    from annotation.services.members import member_remove
    from annotation.services.participant_data import participant_erase
    from annotation.services.studies import study_set_status
    from rubrics.services import rubric_version_create
    from rubrics.selectors import rubric_latest_version

    demo_output, load_demo_s = the_demo(shared)
    admin = get_user_model().objects.get(username="admin")

    data = dict(rubric_latest_version(EDITED_RUBRIC).definition)
    data["criteria"] = [dict(c, description=EDITED_DESCRIPTION) if c["key"] == "fluency" else c for c in data["criteria"]]
    version, created = rubric_version_create(data=data, user=admin)
    assert created and version.version > 1

    study = Study.objects.get(slug=REMOVED_FROM)
    member = StudyMember.objects.filter(study=study, role="annotator", user__username="annotator3").get()
    member_remove(study=study, user_id=member.user_id, user=admin)

    study = Study.objects.get(slug=ERASED_IN)
    rater = StudyMember.objects.filter(study=study, user__username__startswith="demo-rater").order_by("pk").first()
    erasure = participant_erase(study=study, user_id=rater.user_id, mode="pseudonymise", by=admin)

    study = Study.objects.get(slug=CLOSED_STUDY)
    study_set_status(study=study, status="closed", user=admin)

    judge_file = tmp / "judge.yaml"
    judge_file.write_text(f"name: {STORED_JUDGE}\nprovider: vllm\nmodel: Qwen/Qwen3-8B\n"
                          "endpoint: http://127.0.0.1:8001/v1\nmethod: all_in_one\nstructured_output: true\n")
    call_command("load_judge", str(judge_file), stdout=io.StringIO())
    return LivedIn(demo_output, load_demo_s, version.version, member.user.username, erasure.pseudonym, judge_file)


def load_demo() -> tuple[str, float]:
    """What load_demo printed, and how long it took."""
    out = io.StringIO()
    started = time.monotonic()
    call_command("load_demo", stdout=out)
    return out.getvalue(), time.monotonic() - started


def the_demo(shared: Path | None = None) -> tuple[str, float]:
    """load_demo's database and files: loaded the first time in this test run, copied back from the first
    load's rows and files after that (tests/demo_snapshot.py; `shared`: a folder of the run that the pytest-xdist
    workers share it through); what load_demo printed, and how long it took."""
    from django.conf import settings
    from django.db import connection

    return demo_snapshot.demo(connection, Path(settings.MEDIA_ROOT), lambda: in_own_thread(load_demo), shared)


def in_own_thread(work):
    """work() in a thread of its own, its result or its exception here. The session's browser (Playwright's
    sync API) keeps an event loop running on the test thread once a browser test has run, and load_demo's
    judge estimates call asyncio.run, which refuses to run inside a running loop."""
    from django.db import connections

    done: dict = {}

    def run() -> None:
        try:
            done["result"] = work()
        except BaseException as exc:  # noqa: BLE001  raised again in the caller's thread
            done["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, name="lived-in")
    thread.start()
    thread.join()
    if "error" in done:
        raise done["error"]
    return done["result"]


@pytest.fixture(scope="module")
def fresh_demo(django_db_setup, django_db_blocker, tmp_path_factory) -> str:
    """The demo as a fresh `make run` has it, loaded once for the module (each test of it then runs in a
    transaction that is rolled back); what load_demo printed. The module's teardown empties the database."""
    with django_db_blocker.unblock():
        output, _ = in_own_thread(lambda: the_demo(demo_snapshot.run_folder(tmp_path_factory)))
    yield output
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)


@pytest.fixture(scope="module")
def lived_in(django_db_setup, django_db_blocker, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lived-in")
    with django_db_blocker.unblock():
        facts = in_own_thread(lambda: live_in(folder, demo_snapshot.run_folder(tmp_path_factory)))
    yield facts
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
