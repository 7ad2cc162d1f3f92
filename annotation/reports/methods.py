"""A methods paragraph generated from a study and its report: the design (items, systems, raters per
item, presentation, randomisation, counterbalancing, blinding, exclusions) and the statistics with
their intervals and values, to paste into a paper. Every number comes from the report."""

from __future__ import annotations

from typing import Any

from annotation.models import Study
from annotation.services.sampling_policy import policy_methods


def _list(words: list[str]) -> str:
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _scale(c: dict[str, Any]) -> str:
    if c.get("min") is not None and c.get("max") is not None:
        return f"{c['name']} ({c['min']}–{c['max']})"
    if c.get("choices"):
        return f"{c['name']} ({'/'.join(c['choices'])})"
    return c["name"]


def _value(stat: dict[str, Any] | None, pct: str) -> str | None:
    if not stat or stat.get("value") is None:
        return None
    ci = stat.get("bootstrap_ci") or stat.get("ci")
    return f"{stat['value']:.2f}" + (f" ({pct} CI {ci[0]:.2f} to {ci[1]:.2f})" if ci else "")


def _design(study: Study, report: dict[str, Any]) -> list[str]:
    counts, criteria = report.get("counts", {}), report.get("criteria", [])
    systems = sorted({s for c in report.get("systems", {}).get("criteria", {}).values() for s in c.get("systems", {})}
                     | {s for per in report.get("systems", {}).get("accept_rate", {}).values() for s in per["systems"]}
                     | {s for c in report.get("comparisons", {}).values() for s in (c.get("systems") or {})})
    rubric = f"“{study.rubric.get('name', study.rubric_version.rubric.slug)}” (version {study.rubric_version.version})"
    what = f"the outputs of {_n(len(systems), 'system')}" if systems else "the outputs"
    sentences = [f"We evaluated {what} on {_n(counts.get('items', 0), 'item')} with the rubric {rubric}, "
                 f"whose {_n(len(criteria), 'criterion', 'criteria')} were {_list([_scale(c) for c in criteria])}."]
    units = [a for a in report.get("agreement", {}).values() if a.get("n_units")]
    per_output = ""
    if units:
        mean = sum(a["n_ratings"] for a in units) / sum(a["n_units"] for a in units)
        per_output = f"; on average {mean:.2f} raters rated each output"
    assigned = (f"each item was assigned to {_n(study.raters_per_item, 'rater')}" if not study.sampling_policy
                else "raters were assigned by the sampling policy below")
    sentences.append(f"{_n(counts.get('raters', 0), 'rater')} gave {_n(counts.get('ratings_analysed', 0), 'rating')} "
                     f"in {_n(counts.get('submitted_assignments', 0), 'submitted item')}; {assigned}{per_output}.")
    if design := policy_methods(study):
        sentences.append(design)
    order = "in a random order for each rater" if study.randomize_items else "in the same order for every rater"
    shown = "one at a time" if study.presentation == Study.Presentation.SUCCESSION else "side by side"
    outputs = ("in a random order" if study.randomize_outputs else "in a fixed order")
    if study.counterbalance:
        outputs += (", counterbalanced across each item's raters (a Williams design) so that each output appeared "
                    "equally often in each position")
    sentences.append(f"Items were presented {order}; the outputs of an item were shown {shown} {outputs}, and the "
                     "systems' names were hidden from the raters.")
    excluded = []
    if counts.get("attention_items"):
        excluded.append(f"{_n(counts['attention_items'], 'attention-check item')} "
                        f"({study.attention_check_rate:.0%} of each rater's items)")
    if counts.get("ignored_assignments"):
        excluded.append(f"{_n(counts['ignored_assignments'], 'submission')} in which the rater marked the item "
                        "as unsuitable")
    if excluded:
        sentences.append(f"We excluded {_list(excluded)} from the analysis.")
    return sentences


def _statistics(report: dict[str, Any]) -> list[str]:
    settings = report.get("settings", {})
    pct = f"{settings.get('ci_level', 0.95):.0%}"
    names = {c["key"]: c["name"] for c in report.get("criteria", [])}
    sentences = []
    agreement = report.get("agreement", {})
    if agreement:
        sentences.append(
            "Inter-rater reliability was estimated per criterion, with each output as a unit, by Krippendorff's α "
            "(interval level for scales, nominal for labels; Krippendorff, 2011) and the one-way random-effects "
            f"intraclass correlation ICC(1) (Shrout & Fleiss, 1979), each with a {pct} percentile bootstrap interval "
            f"over items ({settings.get('n_boot', 1000)} resamples, seed {settings.get('bootstrap_seed', 0)}).")
        values = []
        for key, a in agreement.items():
            alpha, icc1 = _value(a.get("alpha"), pct), _value(a.get("icc1"), pct)
            parts = ([f"α = {alpha}"] if alpha else []) + ([f"ICC(1) = {icc1}"] if icc1 else [])
            if parts:
                values.append(f"{names.get(key, key)}: {', '.join(parts)}")
        if values:
            sentences.append(f"Agreement was {'; '.join(values)}.")
    weighted = (report.get("sampling") or {}).get("weighted") == "hajek"
    if weighted:
        # an active design over-samples the items the judges were unsure of: means are reweighted, agreement is not
        sentences.append(
            "Because items were sampled with unequal probabilities, every human-only estimate of a population "
            "quantity (system means, win shares, accept rates, label shares) weights each item by the inverse of "
            "its recorded sampling probability (Hájek, 1971). Agreement statistics (α, ICC) cannot be reweighted "
            "honestly and describe the rated items only, which over-represent the items the judges disagreed on; "
            "position effects, rater figures and consensus scores likewise describe the ratings given.")
    if report.get("systems", {}).get("criteria"):
        sentences.append(
            "Systems were compared per criterion on the mean of each output's ratings, "
            + (f"Hájek-weighted, with normal {pct} intervals from the linearised variance over items, and pairwise "
               "by normal tests of the weighted mean difference over items" if weighted else
               f"with t-based {pct} intervals over items, and pairwise by Wilcoxon signed-rank tests over items")
            + " with Holm's correction for multiple comparisons.")
    if report.get("comparisons"):
        sentences.append(
            "Comparative judgements were analysed with the Bradley–Terry model fitted by maximum likelihood "
            "(ties counted as half a win; rankings and best–worst answers as the pairs they imply), with 95% Wald "
            "intervals on the log-strengths.")
    consensus = report.get("consensus", {})
    if consensus.get("rows"):
        sentences.append(
            f"Each output's consensus score is the mean of its raters with a normal {pct} interval; outputs rated by "
            f"fewer than {consensus.get('min_raters', 2)} raters were left out ({consensus.get('left_out', 0)}).")
    return sentences


def methods_paragraph(study: Study, report: dict[str, Any]) -> str:
    """One paragraph: the design, then the statistics with their values."""
    return " ".join(_design(study, report) + _statistics(report))
