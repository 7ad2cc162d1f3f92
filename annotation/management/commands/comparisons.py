import json

from django.core.management.base import CommandError

from annotation.stats.comparison_files import comparisons_report, read_comparisons
from annotation.stats.tables import TableError
from config.commands import ConcordCommand


class Command(ConcordCommand):
    help = ("Bradley–Terry strengths (log, centred to mean 0, 95%% intervals; ties half a win), win rates, "
            "and per kind: best–worst counts, Kendall's W with its chi-square test, or the share of pairs "
            "the first-shown output won. Reads a long CSV recognised by its header: "
            "pairwise item,rater,system_a,system_b,winner (winner a system or 'tie'); "
            "ranking item,rater,system,rank (1 = best; ties as equal ranks or average ranks such as 3.5; "
            "Kendall's W uses mid-ranks with the tie correction); "
            "best-worst item,rater,shown,best,worst (shown joined by '|'). Concord's own files are read as "
            "they are: the long export (export_study --format csv or jsonl; one comparative criterion, chosen "
            "with --criterion when it has several; ignored work and attention checks left out, as the report "
            "does) gives the report's figures, and preference pairs (--format pairs) the Bradley–Terry "
            "strengths of the pairs. No database.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("file", help="CSV of pairwise, ranking or best-worst judgements, or Concord's export "
                                         "(CSV or JSON lines) or preference pairs")
        parser.add_argument("--criterion", metavar="KEY", help="the comparative criterion to read from Concord's "
                                                               "export (needed when it has several)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args, file: str, criterion: str | None = None, json: bool = False, **options):
        try:
            report = comparisons_report(read_comparisons(file, criterion))
        except TableError as exc:
            raise CommandError(f"{file}: {exc}") from exc
        if json:
            self.stdout.write(_dumps(report))
            return
        self.stdout.write(f"{report['kind']} judgements; Bradley–Terry log-strengths (mean 0):")
        if report.get("source"):
            self.stdout.write(f"  from {report['source']}")
        if report.get("bt_reason"):
            self.stdout.write(f"  {report['bt_reason']}")
        ranked = sorted(report["systems"].items(), key=lambda kv: -(kv[1]["bt"] if kv[1]["bt"] is not None else 0))
        for name, s in ranked:
            bt = f"{s['bt']:7.3f}  [{s['bt_ci'][0]:.3f}, {s['bt_ci'][1]:.3f}]" if s["bt"] is not None else "      -"
            bws = f"  best-worst {report['bws_count'][name]:+.3f}" if "bws_count" in report else ""
            self.stdout.write(f"  {name:<24}{bt}  {s['n']:g} comparisons{bws}")
        if "kendall_w" in report:
            w = report["kendall_w"]
            self.stdout.write(f"Kendall's W {w['w']:.3f}, chi2 {w['chi2']:.2f}, df {w['df']}, p {w['p']:.4g}"
                              if w["w"] is not None else f"Kendall's W: {w['reason']}")
        if "first_best" in report.get("position", {}):
            p = report["position"]
            self.stdout.write(f"first shown was best in {p['first_best']:.3f} of {p['n']} answers (chance "
                              f"{p['chance']:.3f})" if p["n"] else "no answers to tell the first shown")
        elif "position" in report:
            p = report["position"]
            self.stdout.write(f"first shown won {p['first_wins']:.3f} of {p['n']} decided pairs (p {p['p']:.4g})"
                              if p["n"] else "no decided pairs")


def _dumps(report) -> str:
    return json.dumps(report, indent=2, allow_nan=False)
