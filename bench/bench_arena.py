"""Comparisons at arena scale (issue 26): Bradley–Terry with intervals over 5,000,000 pairwise
judgements among 200 systems in < 10 s, equal to choix on a subsample; the report's Comparisons
section over a study holding them in < 30 s; how both grow with the number of judgements.

Sizes (judgements): default 100k, 300k, 1M; `--full` 1M, 2M, 5M; BENCH_SIZES picks others.
- Bradley–Terry in memory: the judgements as arrays (as a study's answers arrive from COPY), summed
  into the 200 x 200 win matrix and fitted with intervals; beside it the list-of-tuples API
  (`bradley_terry(pairs)`) at the largest size, and the difference from choix (ILSR) on a
  100,000-judgement subsample.
- The report's section: a study of battles between two of 200 systems, 10 votes each, written
  by PostgreSQL (bench/x10_data.py), the section computed in a child process (bench/x10_child.py:
  time, peak RSS, load; BENCH_CODE for another checkout's code, BENCH_PROFILE=1 for a cProfile),
  from an empty cache of kept blocks.
- At the largest size, the section from kept blocks (annotation.reports.pairwise_blocks): cold (none
  kept), warm (nothing changed) and after 1% more judgements on new battles (the arena's next round).
"""

from __future__ import annotations

import os
import time

import numpy as np

from bench.dbtools import bench_database
from bench.growth import growth_rows
from bench.x10_child import codes, measure_in_child
from bench.x10_data import ARENA_SYSTEMS, ARENA_TIES, arena_strengths, arena_system

TARGET_BT_S, TARGET_SECTION_S, TARGET_N = 10.0, 30.0, 5_000_000
SUBSAMPLE = 100_000


def sizes(full: bool) -> list[int]:
    if os.environ.get("BENCH_SIZES"):
        return [int(s) for s in os.environ["BENCH_SIZES"].split(",")]
    return [1_000_000, 2_000_000, 5_000_000] if full else [100_000, 300_000, 1_000_000]


def _row(metric: str, value: float, unit: str, target: str | None = None, ok: bool | None = None) -> dict:
    return {"metric": metric, "value": round(float(value), 6), "unit": unit, "target": target, "ok": ok}


def judgements(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first shown, second shown, outcome) codes: outcome 0 first won, 1 second won, 2 tie."""
    rng = np.random.default_rng(seed)
    strength = arena_strengths()
    a = rng.integers(0, ARENA_SYSTEMS, n)
    b = (a + 1 + rng.integers(0, ARENA_SYSTEMS - 1, n)) % ARENA_SYSTEMS
    first = rng.random(n) < 1 / (1 + np.exp(strength[b] - strength[a]))
    return a, b, np.where(rng.random(n) < ARENA_TIES, 2, np.where(first, 0, 1))


def write_arena_csv(path, n: int, seed: int = 1) -> None:
    """The judgements as the `comparisons` command reads them (item,rater,system_a,system_b,winner),
    written through pyarrow: one battle per line, winner a system's name or 'tie'."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    a, b, outcome = judgements(n, seed)
    names = np.array([arena_system(s) for s in range(ARENA_SYSTEMS)], dtype=object)
    winner = np.where(outcome == 2, "tie", np.where(outcome == 0, names[a], names[b]))
    table = pa.table({"item": np.arange(n).astype(str), "rater": (np.arange(n) % 1000).astype(str),
                      "system_a": names[a], "system_b": names[b], "winner": winner})
    pacsv.write_csv(table, str(path), pacsv.WriteOptions(quoting_style="none"))


def fit_arrays(a: np.ndarray, b: np.ndarray, outcome: np.ndarray) -> dict:
    """Bradley–Terry with intervals from judgement arrays: the win matrix by bincount, then the fit."""
    from annotation.stats.comparisons import bradley_terry_matrix

    k = ARENA_SYSTEMS
    tie = outcome == 2
    winner, loser = np.where(outcome == 0, a, b), np.where(outcome == 0, b, a)
    cells = np.concatenate([(winner * k + loser)[~tie], (a * k + b)[tie], (b * k + a)[tie]])
    weights = np.concatenate([np.ones(int((~tie).sum())), np.full(2 * int(tie.sum()), 0.5)])
    wins = np.bincount(cells, weights=weights, minlength=k * k).reshape(k, k)
    return bradley_terry_matrix([arena_system(s) for s in range(k)], wins)


def _best(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def choix_difference(a, b, outcome) -> float:
    """max |concord - choix ILSR| over the systems, ties as one win each way and wins twice (choix
    has no weights), both centred."""
    import choix

    tie = outcome == 2
    winner, loser = np.where(outcome == 0, a, b), np.where(outcome == 0, b, a)
    data = [(int(w), int(l_)) for w, l_ in zip(winner[~tie], loser[~tie])] * 2
    data += [(int(x), int(y)) for x, y in zip(a[tie], b[tie])] + [(int(y), int(x)) for x, y in zip(a[tie], b[tie])]
    reference = choix.ilsr_pairwise(ARENA_SYSTEMS, data, alpha=0, tol=1e-12, max_iter=10_000)
    ours = fit_arrays(a, b, outcome)["systems"]
    got = np.array([ours[arena_system(s)]["bt"] for s in range(ARENA_SYSTEMS)])
    return float(np.max(np.abs(got - (reference - reference.mean()))))


def _incremental(db_name: str, study, n: int) -> dict:
    """The section cold, warm and after an append of 1% (new battles, one round of the arena)."""
    from annotation.reports.pairwise_blocks import forget
    from bench.x10_data import arena_battles_add

    label = f"{n / 1e6:g}M"
    forget(study, ["preference"])
    runs = {"cold (no block kept)": measure_in_child(db_name, "comparisons", study.slug, label, tag="cold")}
    runs["warm (nothing changed)"] = measure_in_child(db_name, "comparisons", study.slug, label, tag="warm")
    t0 = time.perf_counter()
    arena_battles_add(study, n // 100, seed=0.75)
    append_s = time.perf_counter() - t0
    runs["after 1% more judgements"] = measure_in_child(db_name, "comparisons", study.slug, label, tag="appended")
    answers = {k: r["summary"]["preference"]["n_answers"] for k, r in runs.items()}
    if list(answers.values()) != [n, n, n + n // 100]:
        raise RuntimeError(f"kept blocks counted {answers}")
    rows = [_row(f"report Comparisons section from kept blocks, {n:,} judgements: {k}", r["seconds"], "s")
            for k, r in runs.items()]
    return {"rows": rows, "config": {"judgements": n, "incremental": runs, "appended": n // 100,
                                     "append_setup_s": append_s}}


def run(full: bool = False) -> dict:
    from annotation.stats.comparisons import bradley_terry, pairs_from_pairwise
    from bench.x10_data import arena_study

    rows, measured = [], []
    series = {"BT seconds": [], "section seconds": [], "section peak RSS MB": []}
    for n in sizes(full):
        a, b, outcome = judgements(n)
        load0 = os.getloadavg()
        bt_s, fit = _best(lambda: fit_arrays(a, b, outcome))
        load1 = os.getloadavg()
        at_target = n >= TARGET_N
        rows.append(_row(f"Bradley–Terry + intervals, {n:,} judgements, {ARENA_SYSTEMS} systems (arrays)", bt_s, "s",
                         f"< {TARGET_BT_S:g} s at 5M" if at_target else None, bt_s < TARGET_BT_S if at_target else None))
        series["BT seconds"].append((n, bt_s))
        with bench_database("x10arena") as db_name:
            from annotation.reports.pairwise_blocks import forget  # (Django is set up by now)

            t0 = time.perf_counter()
            study = arena_study(n)
            setup_s = time.perf_counter() - t0
            results = []
            for tag, code in codes():
                forget(study, ["preference"])  # each code from a cold start
                results.append((tag, measure_in_child(db_name, "comparisons", study.slug, f"{n / 1e6:g}M", code, tag)))
            incremental = _incremental(db_name, study, n) if n == max(sizes(full)) else None
        rows.append(_row(f"data setup, {n:,} judgements (INSERT ... SELECT; not a target)", setup_s, "s"))
        for tag, res in results:
            rows.append(_row(f"report Comparisons section ({tag}), {n:,} judgements", res["seconds"], "s",
                             f"< {TARGET_SECTION_S:g} s at 5M" if at_target else None,
                             res["seconds"] < TARGET_SECTION_S if at_target else None))
            rows.append(_row(f"report Comparisons section ({tag}), {n:,} judgements: peak RSS (baseline "
                             f"{res['rss_baseline_mb']:.0f} MB)", res["rss_peak_mb"], "MB"))
            if tag == "after":
                series["section seconds"].append((n, res["seconds"]))
                series["section peak RSS MB"].append((n, res["rss_peak_mb"]))
            measured.append({"judgements": n, "code": tag, "bt_s": bt_s, "load_bt": [load0, load1],
                             "section_s": res["seconds"], "section_rss_peak_mb": res["rss_peak_mb"],
                             "rss_baseline_mb": res["rss_baseline_mb"],
                             "load_section": [res["load_before"], res["load_after"]], "setup_s": setup_s,
                             "summary": res["summary"],
                             "top_system_in_memory": max(fit["systems"], key=lambda s: fit["systems"][s]["bt"])})
        if incremental:
            rows += incremental["rows"]
            measured.append(incremental["config"])
    # The list-of-tuples API at the largest size: what a caller holding Python pairs pays.
    listed = [w for x, y, o in zip(a.tolist(), b.tolist(), outcome.tolist())
              for w in pairs_from_pairwise(arena_system(x), arena_system(y),
                                           "tie" if o == 2 else arena_system(x if o == 0 else y))]
    t0 = time.perf_counter()
    bradley_terry(listed)
    rows.append(_row(f"Bradley–Terry + intervals, {n:,} judgements as a list of (winner, loser, weight)",
                     time.perf_counter() - t0, "s"))
    del listed
    sub = np.random.default_rng(2).choice(n, size=min(SUBSAMPLE, n), replace=False)
    d = choix_difference(a[sub], b[sub], outcome[sub])
    rows.append(_row(f"max |concord - choix ILSR| on a {sub.size:,}-judgement subsample", d, "", "< 1e-6", d < 1e-6))
    if len(series["BT seconds"]) >= 2:
        rows += growth_rows("arena", "judgements", {k: v for k, v in series.items() if len(v) >= 2})
    return {"name": "arena", "rows": rows, "config": {"sizes": measured, "systems": ARENA_SYSTEMS, "ties": ARENA_TIES,
                                                      "votes_per_battle": 10}}


if __name__ == "__main__":
    import sys

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CONCORD_TESTING", "1")
    for r in run(full="--full" in sys.argv)["rows"]:
        print(f"{r['metric']:<90} {r['value']:>12,.6g} {r['unit']:<4} {r['target'] or ''} {r['ok']}")
