import json
from pathlib import Path

from django.core.management.base import CommandError

from annotation.stats.classification import gold_eval, seed_table
from annotation.stats.tables import TableError, read_labels
from config.commands import ConcordCommand


class Command(ConcordCommand):
    help = ("Evaluate predicted labels against gold labels (CSV files with columns id,label; an optional "
            "cost column in PRED gives the cost per 10K). Every gold id counts: a prediction that is missing, "
            "empty, 'Error' or an unknown label is wrong, and how many there were is reported. "
            "The same figures as a judge run's report.txt. Needs no database.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("gold", help="gold CSV: id,label")
        parser.add_argument("pred", help="predictions CSV: id,label[,cost]")
        parser.add_argument("--positive", default="TP", help="positive class for binary metrics (default TP)")
        parser.add_argument("--labels", default="",
                            help="comma-separated valid labels, e.g. TP,FP3,FP2,FP1 (default: the gold labels); "
                                 "a prediction outside them counts as unparsed")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, gold: str, pred: str, positive: str, labels: str = "", json: bool = False, **options):
        try:
            gold_labels, _ = read_labels(gold)
        except TableError as exc:
            raise CommandError(f"{gold}: {exc}") from exc
        try:
            pred_labels, cost = read_labels(pred, cost=True, empty_labels=True)
        except TableError as exc:
            raise CommandError(f"{pred}: {exc}") from exc
        if not any(i in pred_labels for i in gold_labels):
            raise CommandError(f"{pred}: no id in common with {gold}")
        known = [x.strip() for x in labels.split(",") if x.strip()] or None
        report = gold_eval(gold_labels, pred_labels, positive=positive, cost=cost, labels=known)
        if json:
            self.stdout.write(_dumps(report))
        else:
            n_classes = len(report["labels"])
            self.stdout.write("\n".join(seed_table(report, method=Path(pred).stem, n_classes=n_classes)) + "\n\n")
            self.stdout.write(_table(report))


def _dumps(report) -> str:
    return json.dumps(report, indent=2, allow_nan=False)


def _table(r) -> str:
    lines = [f"n = {r['n']}  (missing predictions: {r['missing']}, unparsed: {r['unparsed']}; both count as wrong)",
             f"accuracy          {r['accuracy']:.3f}",
             f"macro F1          {r['macro_f1']:.3f}",
             f"binary accuracy   {r['binary']['accuracy']:.3f}  ({r['binary']['positive']} vs rest)",
             f"binary F1         {r['binary']['f1']:.3f}"]
    if r["cost_per_10k"] is not None:
        lines.append(f"cost per 10K      ${r['cost_per_10k']:.2f}")
    lines += ["", f"{'class':<10}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}"]
    for label, m in r["per_class"].items():
        lines.append(f"{label:<10}{m['precision']:>10.3f}{m['recall']:>10.3f}{m['f1']:>10.3f}{m['support']:>10}")
    labels = r["confusion_matrix"]["labels"]
    lines += ["", "confusion (rows gold, columns predicted)", " " * 10 + "".join(f"{x:>8}" for x in labels)]
    for label, row in zip(labels, r["confusion_matrix"]["matrix"]):
        lines.append(f"{label:<10}" + "".join(f"{v:>8}" for v in row))
    if r["missing_predictions"]:
        lines.append(f"\nmissing: {', '.join(r['missing_predictions'][:20])}" +
                     (" ..." if r["missing"] > 20 else ""))
    if r["unparsed_predictions"]:
        lines.append(f"unparsed: {', '.join(r['unparsed_predictions'][:20])}" + (" ..." if r["unparsed"] > 20 else ""))
    if r["unknown_ids"]:
        lines.append(f"{len(r['unknown_ids'])} predicted ids not in gold")
    return "\n".join(lines)
