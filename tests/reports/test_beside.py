"""A large report's agreement section computed in a forked child (annotation.reports.beside)."""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest

from annotation.reports import study as study_module
from annotation.reports.beside import Beside, ChildFailed

pytestmark = pytest.mark.django_db


def _without_time(report: dict) -> str:
    return json.dumps({k: v for k, v in report.items() if k != "generated_at"}, sort_keys=True)


@pytest.mark.parametrize("fixture", ["rated_study", "feedback_study"])
def test_the_report_with_its_agreement_beside_equals_the_report_computed_in_turn(fixture, request, monkeypatch):
    study = request.getfixturevalue(fixture)
    monkeypatch.setattr(study_module, "AGREEMENT_BESIDE_ROWS", 10**12)
    in_turn = study_module.study_report(study, n_boot=200)
    children = []

    class Recorded(Beside):
        def __init__(self, fn):
            super().__init__(fn)
            children.append(self._pid)

    monkeypatch.setattr(study_module, "AGREEMENT_BESIDE_ROWS", 1)
    monkeypatch.setattr(study_module, "Beside", Recorded)
    beside = study_module.study_report(study, n_boot=200)
    assert len(children) == 1 and children[0] not in (0, os.getpid())
    assert beside["agreement"] and beside["agreement"] == in_turn["agreement"]
    assert _without_time(beside) == _without_time(in_turn)
    # The child left without closing the caller's database connection.
    assert study.items.count() > 0


def test_an_exception_in_the_child_is_raised_in_the_caller_with_its_traceback():
    def fails():
        raise ValueError("no unit has two ratings")

    with pytest.raises(ChildFailed, match=r"(?s)ValueError: no unit has two ratings.*"):
        Beside(fails).result()


def test_a_child_that_dies_is_reported_not_waited_for():
    with pytest.raises(ChildFailed, match="killed by signal 9"):
        Beside(lambda: os.kill(os.getpid(), signal.SIGKILL)).result()


def test_a_result_larger_than_the_pipe_comes_back_whole():
    values = np.random.default_rng(1).normal(size=2_000_000)  # 16 MB: far more than a pipe holds
    back = Beside(lambda: {"values": values, "sum": float(values.sum())}).result()
    assert np.array_equal(back["values"], values) and back["sum"] == float(values.sum())
