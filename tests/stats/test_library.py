"""`concord.stats`: the statistics importable without Django, the same objects the app uses."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin

import concord.stats as cs
from annotation.management.commands import agreement as agreement_command
from annotation.reports import study as report_study

ROOT = Path(__file__).resolve().parents[2]


def test_importing_it_imports_no_django_and_needs_no_settings():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    code = ("import sys, numpy as np, concord.stats as s; "
            "print(s.krippendorff_alpha(np.array([[1, 2], [3, 3], [4, 5.0]]), 'interval').value); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'rest_framework', 'celery'}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    alpha, loaded = out.stdout.splitlines()
    assert loaded == "[]"
    assert 0 < float(alpha) < 1


def test_every_function_names_its_reference():
    for name in cs.__all__:
        obj = getattr(cs, name)
        if name == "Stat" or name.startswith("read_") or name == "comparisons_report":
            continue
        doc = inspect.getdoc(obj) or ""
        assert re.search(r"\b(18|19|20)\d\d\b", doc), f"{name}'s docstring names no reference"


def test_the_reference_page_lists_every_function():
    page = (ROOT / "docs" / "statistics.md").read_text()
    missing = [name for name in cs.__all__ if f"`{name}`" not in page]
    assert missing == []


def test_the_commands_and_the_report_use_the_same_functions():
    assert agreement_command.agreement_report is cs.agreement_report
    assert report_study.icc is cs.icc
    assert report_study.agreement_report is cs.agreement_report
    assert report_study.compare_systems is cs.compare_systems


def test_a_value_through_the_library_matches_pingouin():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=30)
    matrix = truth[:, None] + rng.normal(scale=0.5, size=(30, 3))
    long = pd.DataFrame([(i, r, matrix[i, r]) for i in range(30) for r in range(3)], columns=["i", "r", "s"])
    ref = pingouin.intraclass_corr(long, targets="i", raters="r", ratings="s").set_index("Type")
    assert np.isclose(cs.icc(matrix)["ICC2"].value, ref.loc["ICC(A,1)", "ICC"])
