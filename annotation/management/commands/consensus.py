"""consensus SLUG|FILE.csv --method majority|dawid-skene|one-coin|glad|mace|best [--criterion KEY] [--json|--csv]"""

from __future__ import annotations

import csv
import json
from typing import Any

import numpy as np
import pandas as pd
from django.core.management.base import CommandError

from annotation.stats.rating_files import file_codes, is_file
from annotation.stats.tables import TableError

from annotation.models import Study
from annotation.reports.ratings import rater_names, stats_frame
from annotation.reports.stats import add_analysis_value, criterion_measure
from annotation.stats.raters import METHODS, best_label_model, label_data, rater_effects
from annotation.stats.raters.tables import effects_tables, label_tables
from config.commands import ConcordCommand

CHOICES = ["best", *(m.replace("_", "-") for m in METHODS)]


class Command(ConcordCommand):
    help = ("Consensus that models the raters, from a study's stored ratings (attention checks left out) or "
            "from a long CSV as `agreement` reads it (item,rater,score[,criterion][,output], or Concord's own "
            "export, export_study --format csv, jsonl or parquet, as it is: the same figures as from the stored "
            "study). "
            "Categorical criteria (binary, choice): each output's posterior per choice and each rater's "
            "estimated accuracy, agreement and the method's own estimate (best: the lowest BIC). Likert and "
            "numeric criteria: the rater-effects model whatever the method, each output's adjusted mean with "
            "its 95% interval and each rater's bias and noise SD. Prints a summary, or every row with --json "
            "or --csv (columns: table, criterion, method, then the row's fields). In a file, a criterion whose "
            "scores are numbers is a scale and one with text labels is categorical (its labels in sorted "
            "order); in Concord's export the criterion_kind column says which.")

    def add_arguments(self, parser):
        parser.add_argument("slug", metavar="STUDY_OR_FILE",
                            help="the study's slug, or a CSV file of ratings (a path with a '.' or '/')")
        parser.add_argument("--method", choices=CHOICES, default="best")
        parser.add_argument("--criterion", action="append", default=[], metavar="KEY",
                            help="only this criterion (repeatable; default: every categorical and numeric one)")
        out = parser.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="every row as JSON")
        out.add_argument("--csv", action="store_true", help="every row as CSV")

    def handle(self, *args, slug: str, method: str, criterion: list[str], json: bool = False, csv: bool = False,
               **opts):
        source = "file" if is_file(slug) else "study"
        if source == "file":
            try:
                coded = list(file_codes(slug, criterion))
            except TableError as exc:
                raise CommandError(f"{slug}: {exc}") from exc
        else:
            study = Study.objects.select_related("rubric_version").filter(slug=slug).first()
            if study is None:
                raise CommandError(f"no study with slug {slug!r}")
            coded = _codes(study, _criteria(study, criterion))
        results = [_fit(c, codes, method.replace("-", "_")) for c, codes in coded]
        if json:
            self.stdout.write(_dumps({source: slug, "criteria": results}))
        elif csv:
            _write_csv(self.stdout, results)
        else:
            self.stdout.write(_summary(results))


def _criteria(study: Study, wanted: list[str]) -> list[dict]:
    analysed = [c for c in study.rubric["criteria"] if criterion_measure(c) is not None]
    keys = {c["key"] for c in analysed}
    unknown = [k for k in wanted if k not in keys]
    if unknown:
        raise CommandError(f"--criterion {unknown[0]!r}: not a categorical or numeric criterion of {study.slug}; "
                           f"choose from {', '.join(sorted(keys)) or '(none)'}")
    return [c for c in analysed if not wanted or c["key"] in wanted]


def _codes(study: Study, criteria: list[dict]):
    """(criterion, {"unit", "rater", "x" codes, "units" names, "raters" names}) for each criterion rated."""
    if not criteria:
        return
    df = stats_frame(study, [c["key"] for c in criteria])
    df = add_analysis_value(df[~df["is_attention_check"].to_numpy()], criteria)
    names = rater_names(study)
    for c in criteria:
        rows = (df["criterion"] == c["key"]).to_numpy() & df["x"].notna().to_numpy()
        if not rows.any():
            continue
        item = df["item"].astype(str).to_numpy()[rows]
        output = df["output"].to_numpy()[rows]
        unit, unit_keys = pd.factorize(pd.MultiIndex.from_arrays([item, output]))
        rater, rater_ids = pd.factorize(df["rater_id"].to_numpy()[rows])
        yield c, {"unit": unit, "rater": rater, "x": df["x"].to_numpy(float)[rows],
                  "units": [{"item": i, "output": None if pd.isna(o) else int(o)} for i, o in unit_keys],
                  "raters": [str(names.get(r, r)) for r in rater_ids]}


def _fit(c: dict, codes: dict, method: str) -> dict[str, Any]:
    if criterion_measure(c) == "numeric":
        fit = rater_effects(codes["unit"], codes["rater"], codes["x"])
        units, raters = effects_tables(fit, codes["units"], codes["raters"])
        return {"criterion": c["key"], "method": "rater_effects", "reason": "a scale: rater effects (REML)",
                "bias_sd": fit.bias_sd, "noise_sd": fit.noise_sd, "units": units, "raters": raters}
    choices = [str(ch["value"]) for ch in c.get("choices", [])]
    data = label_data(codes["unit"], codes["rater"], codes["x"].astype(np.int64), n_classes=len(choices),
                      n_items=len(codes["units"]), n_raters=len(codes["raters"]))
    if method == "best":
        choice = best_label_model(data)
        fit, reason, fits = choice.best, choice.reason, choice.table()
    else:
        fit, reason, fits = METHODS[method](data), "chosen with --method", None
    units, raters = label_tables(fit, codes["units"], codes["raters"], choices)
    return {"criterion": c["key"], "method": fit.method, "reason": reason, "log_likelihood": fit.log_likelihood,
            "bic": fit.bic, "fits": fits, "units": units, "raters": raters}


def _flat(row: dict) -> dict:
    unit = row.get("unit")
    if isinstance(unit, dict):
        return {"item": unit["item"], "output": unit["output"], **{k: v for k, v in row.items() if k != "unit"}}
    return row


def _write_csv(stream, results: list[dict]) -> None:
    fields: dict[str, None] = {"table": None, "criterion": None, "method": None}
    rows = []
    for r in results:
        for table in ("units", "raters"):
            for row in r[table]:
                flat = {"table": table, "criterion": r["criterion"], "method": r["method"], **_flat(row)}
                fields.update(dict.fromkeys(flat))
                rows.append(flat)
    writer = csv.DictWriter(stream, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def _summary(results: list[dict]) -> str:
    if not results:
        return "no categorical or numeric criterion has ratings"
    lines = []
    for r in results:
        lines.append(f"criterion {r['criterion']}: {r['method']} ({r['reason']}); "
                     f"{len(r['units'])} outputs, {len(r['raters'])} raters")
        for row in r["raters"]:
            shown = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in row.items() if k != "rater" and v is not None)
            lines.append(f"  {row['rater']}: {shown}")
        lines.append("")
    return "\n".join(lines)


def _dumps(obj: Any) -> str:
    return json.dumps({**obj, "criteria": [{**r, "units": [_flat(u) for u in r["units"]]} for r in obj["criteria"]]},
                      indent=2, allow_nan=False)
