"""The study report's "Trusting the judges" section (settings.REPORT_SECTIONS), beside
"Judges vs humans": for each finished judge run and each criterion it scores,

- calibration: where the judge states a distribution (G-Eval's score-token probabilities,
  self-consistency samples), its expected calibration error, Brier score and a reliability
  diagram against the human answer (mean rounded to a scale point, or the majority label);
- bias-corrected system scores (scales): per system, the human mean estimated from the judge
  on every output corrected by the outputs humans rated (PPI++), beside the human-only and
  judge-only means, and how many human-rated outputs the judge was worth; where the rater models
  name a lenient or strict rater, the human answer is the rater-effects adjusted mean instead
  (the section says which, `ppi_human_answer`);
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

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from annotation.models import Study
from annotation.reports.plots import COLORS, to_svg, win_rate_heatmap
from annotation.reports.rater_models import modelled_means
from annotation.reports.ratings import stats_frame
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.stats import comparisons as cmp
from annotation.stats.bias import length_controlled, self_preference, verbosity
from annotation.stats.calibration import calibration_long, nearest_points
from annotation.services.active_inference import drawn_items
from annotation.stats.active import ipw_ppi_mean
from annotation.stats.ppi import estimate_system
from judges import score_arrays
from judges.models import JudgeRun, JudgeScore
from judges.report_comparative import comparative_runs, human_agreement
from judges.report_section import finished_runs_inputs
from judges.services.engine import pair_key

TITLE = "Trusting the judges"
MAX_RUNS = 6

def _human_answers(humans_df: pd.DataFrame, criterion: Mapping[str, Any]) -> pd.Series:
    """Per unit (sorted): the human mean (scales) or the unique majority label (choices; ties left out)."""
    df = humans_df
    sel = (df["criterion"] == criterion["key"]).to_numpy() & ~df["is_attention_check"].to_numpy(bool)
    unit = score_arrays.units_of(df["item_id"].to_numpy(np.int64)[sel], df["output"].to_numpy(np.int64)[sel])
    if criterion_measure(criterion) == "numeric":
        x = df["x"].to_numpy(float)[sel]
        finite = np.isfinite(x)
        return pd.Series(x[finite]).groupby(unit[finite]).mean()
    labels = df["label"].to_numpy(object)[sel]
    given = pd.notna(labels)
    counts = (pd.DataFrame({"unit": unit[given], "label": labels[given].astype(str)})
              .value_counts(sort=False).reset_index(name="n").sort_values(["unit", "n"], ascending=[True, False]))
    rank = counts.groupby("unit").cumcount()  # 0: the most given label, 1: the next
    top = counts[rank == 0].set_index("unit")
    runner_up = counts[rank == 1].set_index("unit")["n"].reindex(top.index, fill_value=0)
    unique = top["n"].to_numpy() > runner_up.to_numpy()
    return top["label"][unique]


HUMAN_MEAN = {"answer": "human mean", "method": "mean",
              "reason": "no rater lenient or strict enough for the rater-effects model to change the consensus"}


def _ppi_answers(humans_df: pd.DataFrame, criterion: Mapping[str, Any], humans: pd.Series
                 ) -> tuple[pd.Series, dict[str, Any]]:
    """The human answer the PPI estimates of a scale use, and which it is: the rater-effects adjusted
    mean where the rater models name a lenient or strict rater (annotation.reports.rater_models), else
    the human mean (`humans`)."""
    df = humans_df
    sel = ((df["criterion"] == criterion["key"]).to_numpy() & ~df["is_attention_check"].to_numpy(bool)
           & np.isfinite(df["x"].to_numpy(float)))
    unit = score_arrays.units_of(df["item_id"].to_numpy(np.int64)[sel], df["output"].to_numpy(np.int64)[sel])
    code, units = pd.factorize(unit)
    rater, _ = pd.factorize(df["rater_id"].to_numpy()[sel])
    fit = modelled_means(code.astype(np.int64), rater.astype(np.int64), df["x"].to_numpy(float)[sel], criterion)
    if fit is None:
        return humans, HUMAN_MEAN
    means = pd.Series(fit["means"][:len(units)], index=units).sort_index()
    return means, {"answer": "rater-effects adjusted mean", "method": fit["method"], "reason": fit["reason"]}


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


def _human_truth(humans: pd.Series, numeric: bool, points: Sequence[float]) -> pd.Series:
    """The human answer a judge's distribution is scored against, per unit: for a scale the point
    nearest the human mean (halves go up; None without points), else the majority label."""
    if not numeric:
        return humans
    if not points:
        return pd.Series(None, index=humans.index, dtype=object)
    return pd.Series(nearest_points(humans.to_numpy(float), points), index=humans.index)


def _run_criterion(run_name: str, criterion: Mapping[str, Any], judged: pd.DataFrame, stated: pd.DataFrame,
                   humans: pd.Series, outputs: pd.DataFrame, model: str = "",
                   ppi_humans: pd.Series | None = None,
                   drawn: Mapping[int, tuple[float, bool]] | None = None) -> dict[str, Any]:
    """One run's figures on one criterion. `judged`: its answers (row, unit, score), sorted by unit;
    `stated`: the distributions its answers state (row, answer, weight); `humans`: the human answer
    per unit; `ppi_humans`: the one the PPI estimates use (default `humans`); `outputs`: the study's
    outputs by unit (system, words, family); `drawn`: under active inference, each drawn item's
    (probability, drawn for humans), which adds the IPW PPI++ estimate per system."""
    numeric = criterion_measure(criterion) == "numeric"
    step = float(criterion.get("step") or 1)
    points = (list(np.arange(criterion["min"], criterion["max"] + step / 2, step))
              if numeric and "min" in criterion and "max" in criterion else [])
    units = judged["unit"].to_numpy()
    rated = humans.index.get_indexer(units) >= 0
    long = stated[stated["row"].isin(judged["row"].to_numpy()[rated])]
    calib = None
    if not long.empty:
        truth = _human_truth(humans, numeric, points).reindex(units).to_numpy(object)
        calib = calibration_long(pd.Index(judged["row"]).get_indexer(long["row"]), long["answer"].to_numpy(object),
                                 long["weight"].to_numpy(float), truth)
    out: dict[str, Any] = {"name": run_name, "calibration": calib}
    if not numeric:
        return out
    at = outputs["unit"].searchsorted(units)
    known = np.isfinite(judged["score"].to_numpy(float)) & (at < len(outputs))
    known[known] = outputs["unit"].to_numpy()[at[known]] == units[known]
    score, units, at = judged["score"].to_numpy(float)[known], units[known], at[known]
    system, words, family = (outputs[c].to_numpy()[at] for c in ("system", "words", "family"))
    human = humans.reindex(units).to_numpy(float)
    ppi_human = human if ppi_humans is None else ppi_humans.reindex(units).to_numpy(float)
    labelled = ~np.isnan(ppi_human)
    code, names = pd.factorize(system, sort=True)
    order = np.argsort(code, kind="stable")
    bounds = np.searchsorted(code[order], np.arange(len(names) + 1))
    out["systems"] = {}
    for k, name in enumerate(names):
        rows = order[bounds[k]:bounds[k + 1]]
        y, yhat = ppi_human[rows], score[rows]
        out["systems"][name] = estimate_system(y[labelled[rows]], yhat[labelled[rows]], yhat[~labelled[rows]])
        if drawn is not None:
            out["systems"][name]["ipw_ppi_plus"] = _ipw_estimate(units[rows] // score_arrays.UNIT_BASE, y, yhat, drawn)
    out["win_rates"] = _win_rates(units // score_arrays.UNIT_BASE, system, score, ppi_human)
    out["verbosity"] = verbosity(score, words)
    out["length_controlled"] = length_controlled(score, words, system)
    named = ~np.isnan(human) & (family != "")
    if named.any():  # judge − human on outputs of the judge's own model family, and of the others
        model = (model or "").lower()
        own = named & np.isin(family, [f for f in set(family[named].tolist()) if f in model])
        if own.any():
            out["self_preference"] = self_preference((score - human)[own], (score - human)[named & ~own])
    return out


def _pairwise_runs(study: Study, runs: Sequence[JudgeRun]) -> list[dict[str, Any]]:
    """Per pairwise run: how often the first-shown response won (both orders of every pair were
    asked), how often the verdict flipped with the swap, and the systems' Bradley–Terry strengths
    from the verdicts that survived it, with a win-rate heat map."""
    out = []
    if not any(run.config.get("method") == "pairwise" for run in runs):
        return out
    outputs = score_arrays.outputs(study)
    systems = {(int(u) // score_arrays.UNIT_BASE, int(u) % score_arrays.UNIT_BASE - 1): system
               for u, system in zip(outputs["unit"].tolist(), outputs["system"].tolist())}
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


def _win(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a > b, 1.0, np.where(a < b, 0.0, 0.5))


def _win_rates(items: np.ndarray, systems: np.ndarray, scores: np.ndarray, humans: np.ndarray) -> dict[str, Any]:
    """Per pair of systems shown on the same items: how often the first beats the second (ties half),
    by the humans' mean scores where humans rated both outputs, corrected PPI++ style by the judge's
    scores on every item (the judge's own win indicator is the prediction). One output per item and
    system: the last by position."""
    df = pd.DataFrame({"item": items, "system": systems, "judge": scores, "human": humans}).drop_duplicates(
        ["item", "system"], keep="last")
    df = df[df["item"].duplicated(keep=False)]  # items with two systems or more
    pairs = df.merge(df, on="item", suffixes=("_a", "_b"))
    pairs = pairs[pairs["system_a"] < pairs["system_b"]].sort_values(["system_a", "system_b", "item"], kind="stable")
    out = {}
    for (a, b), p in pairs.groupby(["system_a", "system_b"], sort=True):
        both = p["human_a"].notna().to_numpy() & p["human_b"].notna().to_numpy()
        judge_win = _win(p["judge_a"].to_numpy(), p["judge_b"].to_numpy())
        e = estimate_system(_win(p["human_a"].to_numpy()[both], p["human_b"].to_numpy()[both]), judge_win[both],
                            judge_win[~both])
        for block in (e["human_only"], e["ppi"], e["ppi_plus"]):
            if block.get("ci"):  # a rate: the normal interval is cut to [0, 1]
                block["ci"] = [max(0.0, block["ci"][0]), min(1.0, block["ci"][1])]
        out[f"{a} vs {b}"] = e
    return out


def _ipw_estimate(items: np.ndarray, y: np.ndarray, yhat: np.ndarray,
                  drawn: Mapping[int, tuple[float, bool]]) -> dict[str, Any]:
    """ipw_ppi_mean over the outputs of the items drawn so far (each with its item's probability); null,
    with the reason, while an item drawn for humans has no human answer yet."""
    known = np.array([int(i) in drawn for i in items], dtype=bool)
    if known.sum() < 2:
        return {"mean": None, "reason": "fewer than two items drawn yet"}
    pi = np.array([drawn[int(i)][0] for i in items[known]])
    chosen = np.array([drawn[int(i)][1] for i in items[known]])
    waiting = int(np.sum(chosen & np.isnan(y[known])))
    if waiting:
        return {"mean": None, "reason": f"{waiting} outputs drawn for humans are not rated yet"}
    if not chosen.any():
        return {"mean": None, "reason": "no output drawn for humans yet"}
    out = ipw_ppi_mean(np.where(chosen, y[known], np.nan), yhat[known], pi, chosen)
    return {k: out[k] for k in ("mean", "ci", "lambda", "n_items", "n_rated", "expected_rated")}


def judge_trust(study: Study, report: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    runs = list(JudgeRun.objects.filter(study=study, status__in=JudgeRun.FINISHED).order_by("-finished_at")[:MAX_RUNS])
    if not runs:
        return None
    pairwise = _pairwise_runs(study, runs)
    compared = comparative_runs(study, runs)
    judged_keys = {k for r in runs for k in (r.criteria or [])}
    crits = [c for c in study.rubric.get("criteria", []) if criterion_measure(c) and c["key"] in judged_keys]
    if not crits and not pairwise and not compared:
        return None
    humans_df = add_analysis_value(stats_frame(study, [c["key"] for c in crits]), crits)
    outputs = score_arrays.outputs(study)
    keys = [c["key"] for c in crits]
    scored = score_arrays.scored(runs, keys)
    stated = score_arrays.stated(runs, keys)
    judged = {key: part.drop(columns=["run_id", "criterion"]).reset_index(drop=True)
              for key, part in scored.groupby(["run_id", "criterion"], sort=False)}
    drawn = drawn_items(study)
    context: dict[str, Any] = {"criteria": [], "pairwise": pairwise, "comparative": compared,
                               "active": drawn is not None}
    data: dict[str, Any] = {"criteria": {}, "pairwise": [{k: v for k, v in p.items() if k != "heatmap"}
                                                          for p in pairwise],
                            "comparative": [{k: v for k, v in p.items() if k != "heatmap"} for p in compared]}
    for c in crits:
        humans = _human_answers(humans_df, c)
        entry: dict[str, Any] = {"key": c["key"], "name": c.get("name", c["key"]), "measure": criterion_measure(c),
                                 "runs": [], "n_human_units": len(humans)}
        at = outputs["unit"].searchsorted(humans.index.to_numpy())
        shown = outputs.iloc[at[at < len(outputs)]]
        shown = shown[shown["unit"].to_numpy() == humans.index.to_numpy()[at < len(outputs)]]
        ppi_humans = None
        if entry["measure"] == "numeric":
            ppi_humans, entry["ppi_human_answer"] = _ppi_answers(humans_df, c, humans)
        if entry["measure"] == "numeric" and len(shown):
            h = humans.reindex(shown["unit"]).to_numpy(float)
            entry["human_verbosity"] = verbosity(h, shown["words"].to_numpy())
            entry["human_length_controlled"] = length_controlled(h, shown["words"].to_numpy(),
                                                                 shown["system"].to_numpy())
        for run in runs:
            if (run.pk, c["key"]) in judged:
                entry["runs"].append(_run_criterion(f"{run.name} (run {run.pk})", c, judged[(run.pk, c["key"])],
                                                    stated, humans, outputs, str(run.config.get("model") or ""),
                                                    ppi_humans, drawn))
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
