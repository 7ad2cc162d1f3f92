"""The generated parts of docs/reference/reports-and-exports.md: the export formats (from FORMATS) and the
columns of every table Concord writes (from the schemas the writers use), each with its meaning from the
tables below. The page keeps its prose; each generated block sits between `<!-- generated: NAME -->` and
`<!-- /generated -->`. `.venv/bin/python -m annotation.export_reference` rewrites the blocks, and
tests/docs/test_exports_reference.py fails when a column has no meaning here or the page is stale.
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "reports-and-exports.md"

# Which command or function reads each format back (tests/exports/test_read_back.py checks each).
READ_BY = {
    "csv": "`agreement`, `consensus`, `comparisons`",
    "jsonl": "`agreement`, `consensus`, `comparisons`",
    "parquet": "`agreement`, `consensus`, `comparisons`; `Client.ratings`",
    "pairs": "`comparisons` (a comparative study's pairs)",
    "consensus": "pandas, a spreadsheet",
    "hf": "`datasets.load_dataset`; its ratings as the Parquet export",
    "hf-full": "`datasets.load_dataset(folder, CONFIG)`",
    "items-parquet": "`Client.items`",
    "items-jsonl": "pandas (`read_json(lines=True)`)",
    "consensus-parquet": "`Client.consensus`",
    "consensus-jsonl": "pandas (`read_json(lines=True)`)",
    "raters-parquet": "`Client.rater_estimates`",
}

_ITEM = "the item's id as uploaded"
_OUTPUT = "the output's position in the item (0, 1, …); empty for an item-level answer"
_SYSTEM = "the system (model) that wrote the output"
MEANINGS: dict[str, dict[str, str]] = {
    "long": {
        "item": _ITEM, "output": _OUTPUT, "system": _SYSTEM,
        "rater": "the rater's username",
        "criterion": "the rubric criterion's key, `<key>@<step>` for a per-step question on a trajectory "
                     "(the steps' download says what each step is); empty for an assignment the rater ignored "
                     "without ratings",
        "criterion_kind": "likert, numeric, choice, binary, confidence, text, spans, pairwise, ranking or best_worst",
        "value": "the answer: a number, a choice's label, text; a comparative answer as JSON by output id with "
                 "`systems`, the system of each shown id in the same order",
        "score": "the number the statistics use (a scale's value); empty for labels and text",
        "reasoning": "the rater's reason, where the rubric asks for one",
        "spans": "a highlight criterion's spans as JSON (`[{start, end, text, label}]`): code-point offsets "
                 "into the response's text or, for a per-step criterion, into that step's text (its message, or "
                 "a tool call's arguments; JSON indented by 2, as raters see it)",
        "ignored": "the rater skipped the item (`true`/`false`); left out of every statistic",
        "ignore_reason": "why, as the rater said",
        "comment": "the rater's comment on the item",
        "time_on_task_ms": "milliseconds from showing the item to submitting it",
        "shown_position": "1-based place at which the rater saw the output (position effects)",
        "is_attention_check": "an attention-check item (`true`/`false`); left out of every statistic",
        "sampling": "how the study's sampling policy chose this assignment (`random`, `active`; empty under the "
                    "uniform design)",
        "sampling_probability": "the probability with which the policy chose it (active comparisons: the pair; "
                                "active inference: the item, drawn for humans), for inverse-probability "
                                "weighting outside Concord; empty under the uniform design",
        "submitted_at": "when the assignment was submitted (UTC)",
    },
    "consensus": {
        "item": _ITEM, "output": "the output's position in the item", "system": _SYSTEM,
        "level": "`criterion`, `group` (the rubric's groups), `overall`, or `left_out` (too few raters)",
        "criterion": "the criterion's or group's key; `overall` for the overall score",
        "method": "how the row's consensus was made: mean, majority, rubric weights, or a rater model's name",
        "consensus": "the mean of the raters' scores (numeric levels)",
        "ci_low": "the 95% interval's lower end", "ci_high": "its upper end",
        "sd": "the raters' standard deviation",
        "n": "ratings the row counts (for `left_out`: the raters the output had)",
        "majority": "a label criterion's most frequent label",
        "share": "the majority label's share of the ratings",
        "label": "the rater model's label (a modelled label criterion)",
        "posterior": "the rater model's probability of that label",
    },
    "items": {
        "item": _ITEM, "context": "what the raters saw before the outputs (the prompt, the document)",
        "context_kind": "how the context is shown (text, markdown, code, …)",
        "output": "the output's position in the item (empty: an item without outputs)", "system": _SYSTEM,
        "kind": "the output's kind (text, markdown, code, image, …)", "content": "the output's text",
        "is_attention_check": "an attention-check item",
        "trace_sampling": "for a trace sent to the OTLP endpoint: `flagged` (an evaluation label the study's rule "
                          "names: always kept) or `random` (kept at the rule's rate); empty for other items",
        "inclusion_probability": "the probability with which the study's sampling rule kept the trace (1 for a "
                                 "flagged one); weight a rated trace by its inverse for estimates over all traffic "
                                 "(Horvitz-Thompson); empty for other items",
    },
    "raters": {
        "rater": "the rater's username", "criterion": "the criterion's key",
        "method": "the rater model (dawid_skene, mace, rater_effects, …)", "n": "the rater's ratings",
        "agreement": "share of the rater's labels equal to the consensus label (label criteria)",
        "distance": "mean absolute distance from the other raters' mean (scales)",
        "accuracy": "the model's estimate of the rater's accuracy (labels)",
        "competence": "MACE's competence (1 - the spamming probability)",
        "bias": "the rater's bias on a scale (rater effects), in scale points",
        "noise_sd": "the rater's noise, as a standard deviation in scale points",
        "to_check": "why the report names the rater to check, if it does",
    },
    "comparisons": {
        "item": _ITEM, "rater": "the rater's username", "criterion": "the comparative criterion's key",
        "kind": "pairwise, ranking or best_worst", "shown": "the systems in the order shown",
        "positions": "their output positions, same order",
        "winner": "pairwise: the system preferred, or `tie`",
        "ranks": "ranking: the rank of each shown system (1 = best)",
        "best": "best_worst: the system picked best", "worst": "best_worst: the system picked worst",
    },
    "report_csv": {
        "section": "the report's section (agreement, consensus, raters, systems, …)",
        "criterion": "the criterion's key (empty where the figure is not per criterion)",
        "subject": "what the figure is about: an output (`item#output (system)`), a rater, a system",
        "statistic": "the figure's name (`icc1`, `krippendorff_alpha.nominal`, `consensus`, …)",
        "value": "its value; empty when it cannot be computed",
        "ci_low": "the interval's lower end, if the figure has one", "ci_high": "its upper end",
        "reason": "why the value is empty, or what it depends on",
    },
}


def _schemas() -> dict[str, list[tuple[str, str]]]:
    """(column, type) of each table, from the writers' own schemas."""
    from annotation.comparison_table import COMPARISON_SCHEMA
    from annotation.datasets.tables import CONSENSUS_SCHEMA
    from annotation.datasets.texts import ITEMS_SCHEMA
    from annotation.reports.rater_models import RATERS_SCHEMA
    from annotation.reports.ratings import LONG_SCHEMA
    from annotation.reports.study import CSV_HEADER

    def typed(schema) -> list[tuple[str, str]]:
        return [(f.name, str(f.type)) for f in schema]

    return {"long": typed(LONG_SCHEMA), "consensus": typed(CONSENSUS_SCHEMA), "items": typed(ITEMS_SCHEMA),
            "raters": typed(RATERS_SCHEMA), "comparisons": typed(COMPARISON_SCHEMA),
            "report_csv": [(c, "text") for c in CSV_HEADER]}


def blocks() -> dict[str, str]:
    from annotation.datasets import FORMATS

    out = {"formats": "\n".join(
        ["| format | file | what it holds | read back by |", "|---|---|---|---|"]
        + [f"| `{f.key}` | `SLUG{f.extension}` | {_cell(f.description)} | {READ_BY.get(f.key, '')} |"
           for f in FORMATS.values()])}
    for table, columns in _schemas().items():
        meanings = MEANINGS[table]
        out[f"columns:{table}"] = "\n".join(
            ["| column | type | meaning |", "|---|---|---|"]
            + [f"| `{name}` | {kind} | {_cell(meanings.get(name, ''))} |" for name, kind in columns])
    return out


_BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w:-]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.S)


def render(text: str) -> str:
    """The page with each generated block made anew; an unknown block name raises KeyError."""
    made = blocks()
    return _BLOCK.sub(lambda m: m.group(1) + made[m.group("name")] + "\n" + m.group(4), text)


def block_names(text: str) -> list[str]:
    return [m.group("name") for m in _BLOCK.finditer(text)]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


if __name__ == "__main__":
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    PAGE.write_text(render(PAGE.read_text()))
    print(f"wrote {PAGE.relative_to(PAGE.parents[2])}: {', '.join(block_names(PAGE.read_text()))}")
