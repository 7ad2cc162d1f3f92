"""A run's files are written by the worker that ends the run and, when they are missing, by the
download that asks for them: both may write at once. Each rename must find its own temp file."""

from __future__ import annotations

import stat
import threading

import pytest

from judges.services.files import RUN_FILES, run_dir, write_run_files

pytestmark = pytest.mark.django_db


def test_writers_at_once_each_finish_and_leave_whole_files(make_study, make_judge, make_run):
    study = make_study("rrgen-001")
    run = make_run(study, make_judge(), {(i.external_id, 0, "fluency"): 4 for i in study.items.all()})
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def write() -> None:
        start.wait()
        for _ in range(15):
            try:
                write_run_files(run)
            except BaseException as exc:  # noqa: BLE001 (the assertion below names it)
                errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    d = run_dir(run)
    assert sorted(p.name for p in d.iterdir()) == sorted(RUN_FILES)  # no temp file left behind
    report = (d / "report.txt").read_text()
    assert "fluency" in report or str(run.pk) in report
    assert stat.S_IMODE((d / "report.txt").stat().st_mode) == 0o644
