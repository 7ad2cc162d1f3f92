import json

from django.core.management.base import CommandError

from annotation.stats.ppi import estimate_systems, read_judged_items
from annotation.stats.tables import TableError
from config.commands import ConcordCommand


def _fmt(block) -> str:
    if block.get("mean") is None:
        return f"{'-':>7}  {block.get('reason', '')}"
    ci = block.get("ci")
    return f"{block['mean']:7.3f}" + (f"  [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


class Command(ConcordCommand):
    help = ("Bias-corrected system scores: per system, the mean human score estimated from the judge's "
            "scores on every item, corrected by the items humans rated (PPI and PPI++), beside the "
            "human-only and judge-only means. Reads a CSV item,system,human,judge (human empty where no "
            "human rated the item; several rows of one item are several raters, averaged). No database.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV with columns item,system,human,judge")
        parser.add_argument("--json", action="store_true", help="print JSON: {system: {human_only, judge_only, "
                            "ppi, ppi_plus}}")

    def handle(self, *args, file: str, json: bool = False, **options):
        try:
            estimates = estimate_systems(read_judged_items(file))
        except TableError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        if json:
            self.stdout.write(_dumps(estimates))
            return
        for system, e in estimates.items():
            self.stdout.write(f"system {system}: {e['human_only']['n']} items rated by humans, "
                              f"{e['judge_only']['n']} scored by the judge")
            self.stdout.write(f"  human only  {_fmt(e['human_only'])}")
            self.stdout.write(f"  judge only  {_fmt(e['judge_only'])}")
            self.stdout.write(f"  PPI         {_fmt(e['ppi'])}")
            plus = e["ppi_plus"]
            extra = (f"  lambda {plus['lambda']:.3f}, worth {plus['effective_n']:.1f} human-rated items"
                     if plus.get("lambda") is not None and plus.get("effective_n") else "")
            self.stdout.write(f"  PPI++       {_fmt(plus)}{extra}")


def _dumps(report) -> str:
    return json.dumps(report, indent=2, allow_nan=False)
