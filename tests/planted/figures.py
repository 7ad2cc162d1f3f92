"""The figure inventory: every figure the researcher sees of a study, where it is shown, and the check
that proves it (tests/planted/checks.py), as config/routes.py is the inventory of the routes.

A figure is a number (or a number's absence, shown "—" with a reason) on one of the researcher's
surfaces; SURFACES names them. Figures of the JSON and CSV surfaces are named by their path with the
study's own names replaced by placeholders (`{criterion}`, `{rater}`, `{system}`, `{item}`, `{n}`,
...), so one entry covers that figure for every criterion, rater or system; `*` stands for any
rest of the path. tests/planted/test_figures.py fails while a figure shown on a scanned
surface matches no entry, or an entry's check does not exist.

Check ids say what a figure is compared with:
    planted.*    the planted truth (tests/planted/truth.py), within the tolerance the check states
    reference.*  an independent computation from the exported rows by a reference library
                 (krippendorff, scipy, scikit-learn, statsmodels, choix) or plain arithmetic
    same.*       the same figure on another surface, itself checked there (equal, to the shown digits)
    missing.*    a figure that cannot be computed is absent with a reason (JSON/CSV) or "—" (HTML), never 0
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SURFACES = {
    "report.json": "GET /api/studies/<slug>/report/ (= the report page's JSON download)",
    "report.csv": "GET /studies/<slug>/report/?download=csv: (section, statistic) rows",
    "report.html": "GET /studies/<slug>/report/",
    "paper": "GET /studies/<slug>/report/paper/tables/<name>.md: the paper kit's tables (as in paper.zip)",
    "export.csv": "GET /api/studies/<slug>/export/?file=csv (the rows every reference check reads)",
    "payments.csv": "GET /studies/<slug>/crowd-links/payments.csv?pay_per_item=…: columns",
    "progress.json": "GET /api/studies/<slug>/progress/",
    "progress.html": "GET /studies/<slug>/progress/",
    "plan.html": "GET /studies/<slug>/plan/ (pre-filled from the study as its pilot)",
    "run.json": "GET /api/judges/runs/<id>/ (the judge run summary)",
    "estimate": "GET /judges/studies/<slug>/estimate/?judge=<id> (the run form's estimate) and run.json's estimate",
}


@dataclass(frozen=True)
class Figure:
    surface: str
    path: str
    check: str


def _fig(surface: str, check: str, *paths: str) -> list[Figure]:
    return [Figure(surface, p, check) for p in paths]


J, C = "report.json", "report.csv"
AGREE = "agreement.{criterion}"
DETAILS = f"{AGREE}.details"
RATER = "raters.{rater}"
RM = "rater_models.criteria.{criterion}"
COMP = "comparisons.{criterion}"
SYS = "systems.criteria.{criterion}"
BY_ANSWER = "sections.By participants' answers.{question}.*"
JUDGES = "sections.Judges vs humans.runs.[]"
TRUST = "sections.Trusting the judges.pairwise.[]"

FIGURES: list[Figure] = [
    # ---------------------------------------------------------------- report JSON
    *_fig(J, "planted.counts", "counts.items", "counts.attention_items", "counts.submitted_assignments",
          "counts.ignored_assignments", "study.raters_per_item"),
    *_fig(J, "reference.ratings_analysed", "counts.ratings_analysed", "counts.raters"),
    *_fig(J, "reference.counts_from_export", f"{AGREE}.n_units", f"{AGREE}.n_raters",
          f"{AGREE}.n_ratings", f"{DETAILS}.n_items", f"{DETAILS}.n_raters", f"{DETAILS}.n_ratings"),
    *_fig(J, "reference.krippendorff", f"{AGREE}.alpha.value", f"{DETAILS}.krippendorff_alpha.*",
          "summary.reliability.[].alpha.value"),
    *_fig(J, "reference.alpha_bootstrap_covers", f"{AGREE}.alpha.bootstrap_ci.[]", f"{AGREE}.alpha.ci",
          "summary.reliability.[].alpha.ci.[]"),
    *_fig(J, "reference.kappa_correlation", f"{DETAILS}.fleiss_kappa", f"{DETAILS}.cohen_kappa.*",
          f"{DETAILS}.mean_pairwise_pearson", f"{DETAILS}.mean_pairwise_spearman", f"{DETAILS}.percent_agreement"),
    *_fig(J, "missing.icc_incomplete_design", f"{DETAILS}.icc.*", f"{DETAILS}.icc_ci.*",
          f"{DETAILS}.icc_complete_items"),
    *_fig(J, "reference.icc1_oneway", f"{AGREE}.icc1.value", f"{AGREE}.icc1.k", f"{AGREE}.icc1.n_units",
          f"{AGREE}.icc1.ci.[]", f"{AGREE}.icc1.bootstrap_ci.[]", "summary.reliability.[].icc1.value",
          "summary.reliability.[].icc1.ci.[]"),
    *_fig(J, "planted.settings", "settings.ci_level", "settings.n_boot", "settings.bootstrap_seed",
          "settings.icc_threshold", "summary.reliability.[].threshold", "study.rubric_version",
          "study.consensus_min_raters", "criteria.[].min", "criteria.[].max"),
    *_fig(J, "reference.consensus", "consensus.rows.[].criteria.{criterion}.*", "consensus.rows.[].overall",
          "consensus.rows.[].overall_ci.[]", "consensus.rows.[].output", "consensus.rows.[].vote_count",
          "consensus.n_outputs", "consensus.min_raters", "consensus.left_out"),
    *_fig(J, "reference.rater_stats", f"{RATER}.n_ratings", f"{RATER}.n_items", f"{RATER}.bias",
          f"{RATER}.mae_vs_others", f"{RATER}.pearson_vs_others", f"{RATER}.exact_vs_others",
          f"{RATER}.position_means.{{n}}"),
    *_fig(J, "planted.rater_seconds", f"{RATER}.median_seconds"),
    *_fig(J, "planted.rater_kinds", f"{RM}.raters.[].n", f"{RM}.n_units", f"{RM}.n_answers", f"{RM}.n_raters",
          f"{RM}.raters.[].agreement", f"{RM}.raters.[].accuracy", f"{RM}.raters.[].competence",
          "rater_models.settings.*"),
    *_fig(J, "reference.rater_model", f"{RM}.raters.[].bias", f"{RM}.raters.[].noise_sd", f"{RM}.raters.[].distance",
          f"{RM}.bias_sd", f"{RM}.noise_sd", f"{RM}.differs_from_majority", f"{RM}.differs_share",
          f"{RM}.max_shift"),
    *_fig(J, "planted.gold_accuracy", f"{RATER}.gold_accuracy"),
    *_fig(J, "reference.positions", "position_effects.{criterion}.{n}.*"),
    *_fig(J, "reference.systems", f"{SYS}.systems.{{system}}.*", f"{SYS}.pairs.[].*",
          "summary.ranking.[].ranking.[].*", "summary.ranking.[].significant.[].*",
          "summary.ranking.[].not_significant.[].*", "summary.ranking.[].alpha"),
    *_fig(J, "reference.distributions", "distributions.{criterion}.systems.{system}.[]"),
    *_fig(J, "reference.heatmap", "heatmap.matrix.[].[]", "heatmap.min", "heatmap.max"),
    *_fig(J, "reference.bradley_terry", f"{COMP}.systems.{{system}}.*", f"{COMP}.win_rates.{{system}}.{{system}}",
          f"{COMP}.n_answers", f"{COMP}.n_raters", f"{COMP}.n_items"),
    *_fig(J, "reference.first_wins", f"{COMP}.position.*"),
    *_fig(J, "reference.rerate_and_more_raters", "summary.next.rerate.[].*", "summary.next.more_raters.*"),
    *_fig(J, "reference.by_answer", f"{BY_ANSWER}.*"),
    *_fig(J, "planted.judge_answers", f"{JUDGES}.id", f"{JUDGES}.answers.*",
          "sections.Judges vs humans.left_out.[].id"),
    *_fig(J, "reference.judge_pairwise", f"{TRUST}.*"),
    # ---------------------------------------------------------------- report CSV: (section, statistic)
    *_fig(C, "same.csv_as_json", "summary/alpha", "summary/icc1", "summary/significant_p_holm",
          "summary/rerate_sd", "summary/raters_per_item_needed", "agreement/*", "consensus/*",
          "position_effects/mean", "raters/*", "rater_models/*", "systems/*", "comparisons/*"),
    # ---------------------------------------------------------------- report page
    *_fig("report.html", "same.html_as_json", "agreement table", "systems table", "comparisons table",
          "raters table", "consensus table"),
    # ---------------------------------------------------------------- paper kit tables
    *_fig("paper", "same.paper_as_json", "tables/agreement.md", "tables/raters.md", "tables/systems.md",
          "tables/positions.md", "tables/comparisons.md"),
    # ---------------------------------------------------------------- payment sheet columns
    *_fig("payments.csv", "planted.payments", "items_submitted", "attention_checks", "attention_failed",
          "payable_items", "time_on_task_s", "median_s_per_item", "payment", "bonus", "pay_per_item",
          "training", "decision", "rule", "phase_reached"),
    *_fig("payments.csv", "planted.consent_only_payment", "decision[consent_only]"),
    *_fig("payments.csv", "planted.retried_training_time", "time_on_task_s[failed training]"),
    # ---------------------------------------------------------------- progress
    *_fig("progress.json", "planted.progress", "items", "slots", "submitted", "active", "items_complete",
          "percent"),
    *_fig("progress.html", "planted.progress_page", "ratings done", "items complete", "median time per item",
          "checks passed", "items flagged", "items rated in the last hour", "rater: items done", "rater: in progress",
          "rater: last hour", "rater: median time", "rater: checks passed",
          "rater: training", "rater: decision"),
    *_fig("progress.html", "missing.progress_page", "rater: median time (no item)"),
    *_fig("plan.html", "reference.plan_pilot", "pilot: no win probability when the closest pair splits evenly"),
    # ---------------------------------------------------------------- plan page (the study as its pilot)
    *_fig("plan.html", "reference.plan_pilot", "pilot: sd", "pilot: rho (ICC1 of residuals)", "pilot: report ICC1",
          "pilot: c, observed and corrected", "pilot: ratings, items, raters", "pilot: judgements, tie share",
          "pilot: closest pair's win rate", "plan: items per raters per output (table)", "plan: normal approximation",
          "plan: power reached", "plan: ratings", "plan: decided judgements", "plan: normal approximation (pairs)",
          "plan: binomial power reached", "plan: judgements per pair"),
    *_fig("plan.html", "planted.plan_raters", "raters per output"),
    # ---------------------------------------------------------------- judge runs
    *_fig("run.json", "planted.judge_run", "n_outputs", "n_expected", "n_scored", "n_unparsed", "n_refusal",
          "n_error", "n_truncated", "n_rate_limited", "tokens_in", "tokens_out", "cost_usd", "progress.*",
          "cost_cap_usd", "n_reused", "reused_from"),
    *_fig("run.json", "planted.failed_run_state", "status[every call failed]"),
    *_fig("estimate", "planted.estimate", "estimate.calls", "estimate.items", "estimate.sampled_items",
          "estimate.input_tokens", "estimate.input_cost_usd", "estimate.time_s"),
    *_fig("estimate", "planted.estimate_output_bound", "estimate.max_output_tokens", "estimate.max_cost_usd"),
    *_fig("estimate", "same.estimate_html_as_json", "estimate fragment"),
]


# ---------------------------------------------------------------------------- naming what is shown

def figure_paths(tree, names: dict[str, str]) -> set[str]:
    """The normalised path of every figure (number, or None where a number belongs) in a JSON tree;
    `names` maps the study's own names (raters, systems, criteria, questions...) to placeholders."""
    out: set[str] = set()

    def walk(node, parts: list[str]) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "reason" or key.endswith("_reason") or key == "reasons":
                    continue  # the words beside a figure, not a figure
                walk(value, [*parts, placeholder(str(key), names)])
        elif isinstance(node, list):
            for value in node:
                walk(value, [*parts, "[]"])
        elif node is None or (isinstance(node, (int, float)) and not isinstance(node, bool)):
            out.add(".".join(parts))

    walk(tree, [])
    return out


def placeholder(key: str, names: dict[str, str]) -> str:
    if key in names:
        return names[key]
    if re.fullmatch(r"-?\d+", key):
        return "{n}"
    if key.startswith("pair:"):
        return "{slot}"
    return key


def _pattern(path: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in path.split("*")) + r"\Z")


def listed(surface: str, path: str) -> Figure | None:
    """The inventory entry that names this figure, or None (`*` in an entry: any rest of the path)."""
    return next((f for f in FIGURES if f.surface == surface and _pattern(f.path).match(path)), None)
