"""The study report's "Trusting the judges" section (settings.REPORT_SECTIONS), beside
"Judges vs humans": for each finished judge run and each criterion it scores,

- calibration: where the judge states a distribution (G-Eval's score-token probabilities,
  self-consistency samples), its expected calibration error, Brier score and a reliability
  diagram against the human answer (mean rounded to a scale point, or the majority label);
- bias-corrected system scores (scales): per system, the human mean estimated from the judge
  on every output corrected by the outputs humans rated (PPI++), beside the human-only and
  judge-only means, and how many human-rated outputs the judge was worth;
- verbosity: whether the judge's scores, and the humans', rise with the output's length, and
  each system's score read at the average length (humans and judge side by side);
- self-preference: where an output's metadata names its model `family` and the judge's model
  name contains it, how much more generous the judge is (judge − human) to its own family;
- comparative judges: pairwise runs (position bias, flips, Bradley–Terry) here, ranking and
  best-worst runs in judges.report_comparative.

Pure statistics live in annotation.stats (calibration, ppi, bias); this module only gathers
the study's numbers and draws.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

import numpy as np
from django.db import connection
from matplotlib.figure import Figure

from annotation.models import Item, Output, Study
from annotation.reports.plots import COLORS, to_svg, win_rate_heatmap
from annotation.reports.ratings import stats_frame
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.stats import comparisons as cmp
from annotation.stats.bias import length_controlled, self_preference, verbosity
from annotation.stats.calibration import calibration, human_answer_for_scale
from annotation.stats.ppi import estimate_system
from judges.models import JudgeRun, JudgeScore
from judges.report_comparative import comparative_runs, human_agreement
from judges.report_section import finished_runs_inputs
from judges.services.engine import pair_key

TITLE = "Trusting the judges"
MAX_RUNS = 6

Unit = tuple[int, int]  # (item id, output position; -1 for item-level criteria)


def _outputs(study: Study) -> dict[Unit, tuple[str, int, str]]:
    """(item, position) -> (system, words in the output, its model family from the metadata or "")."""
    sql = (f"SELECT o.item_id, o.position, o.system,"
           f" COALESCE(array_length(regexp_split_to_array(btrim(o.content), '\\s+'), 1), 0),"
           f" COALESCE(o.metadata ->> 'family', '')"
           f" FROM {Output._meta.db_table} o JOIN {Item._meta.db_table} i ON i.id = o.item_id WHERE i.study_id = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [study.pk])
        return {(item, pos): (system or "", int(words), family.lower())
                for item, pos, system, words, family in cursor.fetchall()}


def _human_answers(humans_df, criterion: Mapping[str, Any]) -> dict[Unit, Any]:
    """Per unit: the human mean (scales) or the unique majority label (choices; ties left out)."""
    df = humans_df[(humans_df["criterion"] == criterion["key"]) & ~humans_df["is_attention_check"].astype(bool)]
    out: dict[Unit, Any] = {}
    if criterion_measure(criterion) == "numeric":
        df = df[np.isfinite(df["x"].to_numpy(dtype=float))]
        for (item, pos), x in df.groupby(["item_id", "output"])["x"].mean().items():
            out[(int(item), int(pos))] = float(x)
        return out
    for (item, pos), labels in df.groupby(["item_id", "output"])["label"]:
        counts = Counter(labels.dropna().astype(str)).most_common()
        if counts and (len(counts) == 1 or counts[0][1] > counts[1][1]):
            out[(int(item), int(pos))] = counts[0][0]
    return out


def _distribution(detail: Mapping[str, Any] | None) -> dict[str, float] | None:
    """The judge's stated distribution over answers, if its method gives one."""
    detail = detail or {}
    if detail.get("distribution"):
        return {str(k): float(v) for k, v in detail["distribution"].items()}
    if detail.get("samples"):
        counts = Counter(str(int(s)) if float(s).is_integer() else str(s) for s in detail["samples"])
    elif detail.get("counts"):
        counts = Counter({str(k): int(v) for k, v in detail["counts"].items()})
    else:
        return None
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()}


def _reliability_plot(curves: Mapping[str, Mapping[str, Any]], name: str) -> str | None:
    shown = [(run, c) for run, c in curves.items() if c.get("bins")]
    if not shown:
        return None
    fig = Figure(figsize=(3.4, 3.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--")
    for k, (run, c) in enumerate(shown):
        xs = [b["confidence"] for b in c["bins"]]
        ys = [b["accuracy"] for b in c["bins"]]
        sizes = [12 + 60 * b["n"] / c["n"] for b in c["bins"]]
        ax.plot(xs, ys, color=COLORS[k % len(COLORS)], lw=1, label=f"{run} (ECE {c['ece']:.2f})")
        ax.scatter(xs, ys, s=sizes, color=COLORS[k % len(COLORS)], edgecolors="none")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("judge's confidence")
    ax.set_ylabel("share matching the humans")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    fig.tight_layout()
    return to_svg(fig, f"judges-reliability-{name}")


def _estimates_plot(systems: Mapping[str, Mapping[str, Any]], name: str) -> str | None:
    rows = [(s, e) for s, e in systems.items() if e["human_only"]["mean"] is not None]
    if not rows:
        return None
    fig = Figure(figsize=(5.2, 0.55 * len(rows) + 1.1))
    ax = fig.add_subplot(1, 1, 1)
    kinds = [("human_only", "humans only", COLORS[0]), ("ppi_plus", "PPI++ (judge + humans)", COLORS[2]),
             ("judge_only", "judge only", COLORS[1])]
    for r, (system, e) in enumerate(rows):
        for k, (key, label, color) in enumerate(kinds):
            block = e[key]
            if block.get("mean") is None:
                continue
            y = r + (k - 1) * 0.22
            ci = block.get("ci")
            if ci:
                ax.plot(ci, [y, y], color=color, lw=2)
            ax.scatter([block["mean"]], [y], color=color, s=18, zorder=3, label=label if r == 0 else None)
    ax.set_yticks(range(len(rows)), [s for s, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("mean score (95% interval)")
    ax.legend(fontsize=7, loc="lower right", frameon=False)
    fig.tight_layout()
    return to_svg(fig, f"judges-estimates-{name}")


def _run_criterion(run_name: str, criterion: Mapping[str, Any], judged: Mapping[Unit, tuple[float | None, Any, Any]],
                   humans: Mapping[Unit, Any], outputs: Mapping[Unit, tuple[str, int, str]],
                   model: str = "") -> dict[str, Any]:
    numeric = criterion_measure(criterion) == "numeric"
    step = float(criterion.get("step") or 1)
    points = (list(np.arange(criterion["min"], criterion["max"] + step / 2, step))
              if numeric and "min" in criterion and "max" in criterion else [])
    dists, answers = [], []
    for unit, (score, value, detail) in judged.items():
        dist = _distribution(detail)
        if dist is None or unit not in humans:
            continue
        dists.append(dist)
        answers.append(human_answer_for_scale(humans[unit], points) if numeric else humans[unit])
    out: dict[str, Any] = {"name": run_name, "calibration": calibration(dists, answers) if dists else None}
    if not numeric:
        return out
    by_system: dict[str, dict[str, list]] = defaultdict(lambda: {"y": [], "yhat": [], "unlabelled": []})
    scores, words, systems = [], [], []
    own, others = [], []  # judge − human, on outputs of the judge's own model family and of the others
    model = (model or "").lower()
    for unit, (score, value, _) in judged.items():
        if score is None or unit not in outputs:
            continue
        system, n_words, family = outputs[unit]
        scores.append(score)
        words.append(n_words)
        systems.append(system)
        slot = by_system[system]
        if unit in humans:
            slot["y"].append(humans[unit])
            slot["yhat"].append(score)
            if family:
                (own if family in model else others).append(score - humans[unit])
        else:
            slot["unlabelled"].append(score)
    out["systems"] = {system: estimate_system(np.array(v["y"]), np.array(v["yhat"]), np.array(v["unlabelled"]))
                      for system, v in sorted(by_system.items())}
    out["win_rates"] = _win_rates(judged, humans, outputs)
    out["verbosity"] = verbosity(scores, words)
    out["length_controlled"] = length_controlled(scores, words, systems)
    if own:
        out["self_preference"] = self_preference(own, others)
    return out


def _pairwise_runs(study: Study, runs: Sequence[JudgeRun]) -> list[dict[str, Any]]:
    """Per pairwise run: how often the first-shown response won (both orders of every pair were
    asked), how often the verdict flipped with the swap, and the systems' Bradley–Terry strengths
    from the verdicts that survived it, with a win-rate heat map."""
    out = []
    systems = {(item, pos): system for (item, pos), (system, _, _) in _outputs(study).items()}
    for run in runs:
        if run.config.get("method") != "pairwise":
            continue
        shown, wins, flips, both = [], [], 0, 0
        for item_id, slot, value, status, detail in JudgeScore.objects.filter(run=run).values_list(
                "item_id", "criterion", "value", "status", "detail").iterator():
            try:
                a, b = (int(x) for x in slot.rsplit(":", 1)[1].split("-"))
            except (ValueError, IndexError):
                continue
            sa, sb = systems.get((item_id, a), str(a)), systems.get((item_id, b), str(b))
            v1, v2 = ((detail or {}).get("verdicts") or [None, None])[:2]
            for first, second, verdict in ((a, b, v1), (b, a, v2)):
                if verdict is not None:
                    shown.append((str(first), str(second), "tie" if verdict == "tie" else str(verdict)))
            if v1 is not None and v2 is not None:
                both += 1
                flips += v1 != v2
            if status == "scored" and value is not None:
                wins += [(item_id, w) for w in cmp.pairs_from_pairwise(
                    sa, sb, "tie" if value == "tie" else (sa if int(value) == a else sb))]
        if not shown:
            continue
        humans = human_agreement(study, pair_key(run.config), wins)
        wins = [w for _, w in wins]
        bt = cmp.bradley_terry(wins)
        rates = cmp.win_rates(wins)
        out.append({"name": f"{run.name} (run {run.pk})", "position": cmp.position_effect(shown),
                    "flip_rate": flips / both if both else None, "n_both": both, "strengths": bt,
                    "win_rates": rates, "heatmap": win_rate_heatmap(rates, f"pairwise-{run.pk}"), "humans": humans})
    return out


def _win(a: float, b: float) -> float:
    return 1.0 if a > b else 0.0 if a < b else 0.5


def _win_rates(judged: Mapping[Unit, tuple], humans: Mapping[Unit, Any],
               outputs: Mapping[Unit, tuple[str, int, str]]) -> dict[str, Any]:
    """Per pair of systems shown on the same items: how often the first beats the second (ties half),
    by the humans' mean scores where humans rated both outputs, corrected PPI++ style by the judge's
    scores on every item (the judge's own win indicator is the prediction)."""
    by_item: dict[int, dict[str, tuple[float | None, float | None]]] = defaultdict(dict)
    for unit, (score, _, _) in judged.items():
        if score is not None and unit in outputs:
            by_item[unit[0]][outputs[unit][0]] = (score, humans.get(unit))
    pairs: dict[tuple[str, str], dict[str, list]] = defaultdict(lambda: {"y": [], "yhat": [], "unlabelled": []})
    for systems in by_item.values():
        names = sorted(systems)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                (ja, ha), (jb, hb) = systems[a], systems[b]
                slot = pairs[(a, b)]
                if ha is not None and hb is not None:
                    slot["y"].append(_win(ha, hb))
                    slot["yhat"].append(_win(ja, jb))
                else:
                    slot["unlabelled"].append(_win(ja, jb))
    out = {}
    for (a, b), v in sorted(pairs.items()):
        e = estimate_system(np.array(v["y"]), np.array(v["yhat"]), np.array(v["unlabelled"]))
        for block in (e["human_only"], e["ppi"], e["ppi_plus"]):
            if block.get("ci"):  # a rate: the normal interval is cut to [0, 1]
                block["ci"] = [max(0.0, block["ci"][0]), min(1.0, block["ci"][1])]
        out[f"{a} vs {b}"] = e
    return out


def judge_trust(study: Study, report: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    runs = list(JudgeRun.objects.filter(study=study, status=JudgeRun.Status.DONE).order_by("-finished_at")[:MAX_RUNS])
    if not runs:
        return None
    pairwise = _pairwise_runs(study, runs)
    compared = comparative_runs(study, runs)
    judged_keys = {k for r in runs for k in (r.criteria or [])}
    crits = [c for c in study.rubric.get("criteria", []) if criterion_measure(c) and c["key"] in judged_keys]
    if not crits and not pairwise and not compared:
        return None
    humans_df = add_analysis_value(stats_frame(study, [c["key"] for c in crits]), crits)
    outputs = _outputs(study)
    rows = JudgeScore.objects.filter(run__in=runs, status=JudgeScore.Status.SCORED,
                                     criterion__in=[c["key"] for c in crits]).values_list(
        "run_id", "item_id", "output__position", "criterion", "score", "value", "detail")
    judged: dict[tuple[int, str], dict[Unit, tuple]] = defaultdict(dict)
    for run_id, item_id, position, crit, score, value, detail in rows.iterator():
        unit = (item_id, -1 if position is None else position)
        judged[(run_id, crit)][unit] = (score, value, detail)
    context: dict[str, Any] = {"criteria": [], "pairwise": pairwise, "comparative": compared}
    data: dict[str, Any] = {"criteria": {}, "pairwise": [{k: v for k, v in p.items() if k != "heatmap"}
                                                          for p in pairwise],
                            "comparative": [{k: v for k, v in p.items() if k != "heatmap"} for p in compared]}
    for c in crits:
        humans = _human_answers(humans_df, c)
        human_words = [(humans[u], outputs[u][1], outputs[u][0]) for u in humans if u in outputs]
        entry: dict[str, Any] = {"key": c["key"], "name": c.get("name", c["key"]), "measure": criterion_measure(c),
                                 "runs": [], "n_human_units": len(humans)}
        if entry["measure"] == "numeric" and human_words:
            h, w, sy = zip(*human_words)
            entry["human_verbosity"] = verbosity(h, w)
            entry["human_length_controlled"] = length_controlled(h, w, sy)
        for run in runs:
            if (run.pk, c["key"]) in judged:
                entry["runs"].append(_run_criterion(f"{run.name} (run {run.pk})", c, judged[(run.pk, c["key"])],
                                                    humans, outputs, str(run.config.get("model") or "")))
        if not entry["runs"]:
            continue
        entry["reliability_plot"] = _reliability_plot(
            {r["name"]: r["calibration"] for r in entry["runs"] if r.get("calibration")}, c["key"])
        first = next((r for r in entry["runs"] if r.get("systems")), None)
        entry["estimates_plot"] = _estimates_plot(first["systems"], c["key"]) if first else None
        entry["estimates_run"] = first["name"] if first else None
        context["criteria"].append(entry)
        data["criteria"][c["key"]] = {k: v for k, v in entry.items() if not k.endswith("_plot")}
    if not context["criteria"] and not pairwise and not compared:
        return None
    return {"title": TITLE, "template": "judges/report_trust.html", "context": context, "data": data}


judge_trust.inputs = finished_runs_inputs
