import json

from django.core.management.base import CommandError

from annotation.stats.report import LEVELS, DuplicateRating, LevelError, agreement_report, applicable
from annotation.stats.tables import TableError, read_ratings
from config.commands import ConcordCommand

ROWS = [
    ("alpha nominal", ("krippendorff_alpha", "nominal")),
    ("alpha ordinal", ("krippendorff_alpha", "ordinal")),
    ("alpha interval", ("krippendorff_alpha", "interval")),
    ("alpha ratio", ("krippendorff_alpha", "ratio")),
    *[(f"ICC {form}", ("icc", form)) for form in ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")],
    ("Fleiss kappa", ("fleiss_kappa",)),
    ("Cohen kappa", ("cohen_kappa", "unweighted")),
    ("Cohen kappa linear", ("cohen_kappa", "linear")),
    ("Cohen kappa quadratic", ("cohen_kappa", "quadratic")),
    ("mean pairwise Pearson", ("mean_pairwise_pearson",)),
    ("mean pairwise Spearman", ("mean_pairwise_spearman",)),
    ("percent agreement", ("percent_agreement",)),
]


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


class Command(ConcordCommand):
    help = ("Inter-rater agreement from a long CSV with columns item,rater,score and optionally "
            "criterion. Scores are numbers or text labels (Yes/No, TP/FP3/FP2/FP1, ACCEPT/REJECT: nominal "
            "codes). Only the statistics that make sense at the level of measurement are reported; the "
            "others are null. Needs no database. Judges (--judge) are compared with the human mean per item "
            "(numbers), the human majority label per item, and by the alternative annotator test.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV with columns item,rater,score[,criterion][,output], or Concord's own "
                                         "export (export_study --format csv, jsonl or parquet) as it is")
        parser.add_argument("--judge", action="append", default=[], metavar="RATER",
                            help="a rater that is a judge, not a human (repeatable)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--level", choices=LEVELS, default=None,
                            help="level of measurement of every criterion (default: nominal for text labels, "
                                 "interval for numbers)")

    def handle(self, *args, file: str, judge: list[str], json: bool = False, level: str | None = None, **options):
        try:
            ratings = read_ratings(file)
            report = agreement_report(ratings, judges=judge, level=level, levels=ratings.attrs.get("levels"))
        except LevelError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        except TableError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        except DuplicateRating as exc:
            raise CommandError(f"{file}: row {exc.row + 2}, columns 'item','rater': duplicate rating "
                               f"({exc})") from exc
        if json:
            self.stdout.write(_dumps(report))
            return
        self.stdout.write(self._table(report))

    def _table(self, report) -> str:
        lines = []
        for name, c in report["criteria"].items():
            labels = f"; labels {', '.join(c['labels'])}" if c.get("labels") else ""
            lines.append(f"criterion {name}: {c['n_items']} items, {c['n_raters']} raters, "
                         f"{c['n_ratings']} ratings, {c['level']} level{labels}")
            for label, path in ROWS:
                if not applicable(c["level"], ".".join(path)):
                    continue  # makes no sense at this level: left out (null in --json)
                value = _get(c, path)
                shown = f"{value:8.3f}" if value is not None else "       -"
                reason = c["reasons"].get(".".join(path), "")
                lines.append(f"  {label:<24}{shown}  {reason}".rstrip())
            for judge, stats in c["judges"].items():
                parts = ", ".join(f"{k} {v:.3f}" if v is not None else f"{k} -" for k, v in stats.items()
                                  if applicable(c["level"], f"judges.{k}"))
                lines.append(f"  judge {judge}: {parts}")
            lines.append("")
        return "\n".join(lines)


def _dumps(report) -> str:
    return json.dumps(report, indent=2, allow_nan=False)
