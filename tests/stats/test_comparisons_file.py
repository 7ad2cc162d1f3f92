"""`manage.py comparisons FILE` on a pairwise file read in bulk (annotation.stats.pairwise_csv): the
strengths equal choix's maximum-likelihood estimate on a generated arena file, every field the
line-by-line reader gave, and bad lines named by line and column as before."""

from __future__ import annotations

import json

import choix
import numpy as np
import pytest

from annotation.stats import comparisons as cmp
from bench.bench_arena import write_arena_csv
from tests.offline_command import run_in_process, run_offline

HEADER = "item,rater,system_a,system_b,winner\n"


def _arena(tmp_path, n: int):
    """A file written by the arena bench's writer (200 systems, 10% ties) and its rows as read back."""
    path = tmp_path / "arena.csv"
    write_arena_csv(path, n, seed=3)
    lines = path.read_text().splitlines()[1:]
    return path.read_text(), [tuple(line.split(",")[2:]) for line in lines]


def test_strengths_equal_choix_on_an_arena_file(tmp_path):
    """Tolerance 1e-6 in log-strength (both fits converge to 1e-12; choix's centred). choix has no
    weights: a win is two wins and a tie one each way, the module's half-win rule times two. choix's
    maximum-likelihood estimate from the counts (ilsr_pairwise_dense: 0.02 s here) rather than from the list of
    comparisons (opt_pairwise: the same estimate to 1e-9, in 42 s of Python loops over the 120,000 pairs)."""
    text, rows = _arena(tmp_path, 60_000)
    done = run_offline("comparisons", tmp_path, text, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    systems = sorted({s for a, b, _ in rows for s in (a, b)})
    code = {s: i for i, s in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))  # wins[i, j]: how often i beat j
    for a, b, w in rows:
        if w == "tie":
            wins[code[a], code[b]] += 1
            wins[code[b], code[a]] += 1
        else:
            wins[code[w], code[b if w == a else a]] += 2
    reference = choix.ilsr_pairwise_dense(wins, alpha=0, tol=1e-12)
    got = np.array([out["systems"][s]["bt"] for s in systems])
    np.testing.assert_allclose(got, reference - reference.mean(), atol=1e-6)
    assert len(systems) == 200 and list(out["systems"]) == systems


def test_every_field_is_the_line_by_line_readers(tmp_path):
    """The bulk reader's report against the list path (cmp.pairs_from_pairwise, cmp.win_matrix) on
    the same rows: strengths, intervals, counts, win rates and the position effect."""
    text, rows = _arena(tmp_path, 5_000)
    out = json.loads(run_in_process("comparisons", tmp_path, text, "--json").stdout)
    wins = [w for a, b, win in rows for w in cmp.pairs_from_pairwise(a, b, win)]
    expected = cmp.bradley_terry(wins)
    assert out["systems"].keys() == expected["systems"].keys()
    for s, e in expected["systems"].items():
        assert out["systems"][s]["n"] == e["n"]
        np.testing.assert_allclose([out["systems"][s]["bt"], *out["systems"][s]["bt_ci"]], [e["bt"], *e["bt_ci"]],
                                   atol=1e-9)
    assert out["win_rates"] == json.loads(json.dumps(cmp.win_rates(wins)))
    assert out["position"] == cmp.position_effect(rows)
    assert list(out) == ["kind", "systems", "win_rates", "position"]


@pytest.mark.parametrize("body,message", [
    ("i,r,a,b,a\ni,r,a,a,a\n", "row 3, column 'system_b': a system compared with itself ('a')"),
    ("i,r,a,b,c\ni,r,a,a,a\n", "row 2, column 'winner': 'c' is neither 'a', 'b' nor 'tie'"),
    ("i,r,a,b,a\ni,r, ,b,b\ni,r,a,b,zz\n", "row 3, column 'system_a': empty value"),
    ("i,r,a,b,tie\ni,r,a,b, b \ni,,a,b,a\n", "row 4, column 'rater': empty value"),
    # pyarrow refuses a long line; pandas then reads the file and names it (read_table's message).
    ("i,r,a,b,a\ni,r,a,b,a,extra\n", "not a valid CSV: Error tokenizing data. C error: Expected 5 fields in line 3"),
])
def test_bad_lines_are_named_by_line_and_column(tmp_path, body, message):
    done = run_in_process("comparisons", tmp_path, HEADER + body)
    assert done.returncode != 0 and message in done.stderr, done.stderr


def test_spaces_around_names_and_a_header_alone(tmp_path):
    done = run_in_process("comparisons", tmp_path, HEADER + "i, r , a , b ,b\ni,r,b,a,tie\n", "--json")
    out = json.loads(done.stdout)
    assert out["systems"]["a"]["n"] == 2 and out["win_rates"]["b"]["a"] == 0.75
    assert out["position"] == {"first_wins": 0.0, "n": 1, "p": 1.0}
    # A quote after a space is read as pandas reads it (skipinitialspace): the name unquoted.
    quoted = HEADER + 'i,r, "a a",b,b\ni,r,b,"a a",tie\n'
    out = json.loads(run_in_process("comparisons", tmp_path, quoted, "--json").stdout)
    assert sorted(out["systems"]) == ["a a", "b"] and out["win_rates"]["b"]["a a"] == 0.75
    out = json.loads(run_in_process("comparisons", tmp_path, HEADER, "--json").stdout)
    assert out["systems"] == {} and out["bt_reason"] == "fewer than two systems were compared"
