"""plan_study: items and raters per item, or judgements per pair, for the wanted power."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from annotation.models import Study
from annotation.planning.pilot import pilot_estimates
from annotation.planning.plan import study_plan
from annotation.stats.power import InvalidArgument
from config.commands import ConcordCommand

# argument name in annotation.stats.power -> this command's option
OPTIONS = {"delta": "--delta", "sd": "--sd", "icc": "--icc", "corr": "--corr", "raters": "--raters",
           "power": "--power", "alpha": "--alpha", "win_prob": "--win-prob", "bt_diff": "--bt-diff",
           "ties": "--ties", "criterion": "--criterion"}


class Command(ConcordCommand):
    help = ("Plan a study before its first rating. Scores: items needed (and for R = 1..6 raters per output) "
            "for a two-sided paired t-test to detect a mean difference --delta between two systems, given the "
            "SD of one rating, the inter-rater reliability ICC(1) and the correlation of the systems' true "
            "scores per item; entered, or taken from an existing study with --pilot. Comparisons: judgements "
            "per pair of systems for an exact binomial test to tell --win-prob (or the Bradley–Terry "
            "difference --bt-diff) from 0.5, with a tie share --ties. Prints the formulas used.")
    requires_migrations_checks = False

    def add_arguments(self, parser):
        scores = parser.add_argument_group("scores")
        scores.add_argument("--delta", type=float, help="smallest mean difference worth detecting, in scale points")
        scores.add_argument("--sd", type=float, help="SD of one rating (σ)")
        scores.add_argument("--icc", type=float, help="inter-rater reliability ICC(1), 0..1 (ρ)")
        scores.add_argument("--corr", type=float, help="correlation of the systems' true scores per item, -1..1 (c)")
        scores.add_argument("--raters", type=int, help="raters per output (default: the pilot's, else 3)")
        pilot = parser.add_argument_group("pilot")
        pilot.add_argument("--pilot", metavar="SLUG", help="take --sd, --icc (the report's ICC1), --corr, --raters "
                                                           "(and --ties, --win-prob) from this study where not given")
        pilot.add_argument("--criterion", metavar="KEY", help="the pilot's numeric criterion (default: its first)")
        pairs = parser.add_argument_group("comparisons")
        pairs.add_argument("--win-prob", type=float, help="win probability worth telling from 0.5")
        pairs.add_argument("--bt-diff", type=float, help="Bradley–Terry log-strength difference worth detecting")
        pairs.add_argument("--ties", type=float, help="share of ties, 0 <= t < 1 (default 0)")
        parser.add_argument("--power", type=float, help="wanted power, 0..1 (default 0.8)")
        parser.add_argument("--alpha", type=float, help="two-sided test level, 0..1 (default 0.05)")
        parser.add_argument("--json", action="store_true", help="print the plan as JSON")

    def _pilot(self, slug: str, criterion: str | None) -> dict:
        study = Study.objects.select_related("rubric_version").filter(slug=slug).first()
        if study is None:
            raise CommandError(f"--pilot: no study with slug {slug!r}")
        return pilot_estimates(study, criterion=criterion)

    def handle(self, *args, **opts):
        entered = {name: opts[name] for name in ("delta", "sd", "icc", "corr", "raters", "power", "alpha",
                                                 "win_prob", "bt_diff", "ties")}
        if opts["criterion"] and not opts["pilot"]:
            raise CommandError("--criterion: needs --pilot SLUG")
        try:
            pilot = self._pilot(opts["pilot"], opts["criterion"]) if opts["pilot"] else None
            plan = study_plan(entered, pilot=pilot)
        except InvalidArgument as exc:
            raise CommandError(f"{OPTIONS.get(exc.argument, exc.argument)}: {exc.message}") from exc
        if opts["json"]:
            self.stdout.write(json.dumps(plan, indent=2, allow_nan=False))
            return
        self.stdout.write(format_plan(plan))


def format_plan(plan: dict) -> str:
    lines: list[str] = []
    sources = plan["sources"]
    pilot = plan["pilot"]
    if pilot:
        lines.append(f"Pilot: study {pilot['study']}")
        lines += [f"  note: {note}" for note in pilot["notes"]]

    def src(name: str) -> str:
        return " (from the pilot)" if sources.get(name) == "pilot" else ""

    scores = plan["scores"]
    if scores:
        i = scores["inputs"]
        lines += [
            "Scores: two systems rated on the same items",
            f"  delta {i['delta']:g}, sd {i['sd']:.4g}{src('sd')}, icc {i['icc']:.3f}{src('icc')}, "
            f"corr {i['corr']:.3f}{src('corr')}, power {i['power']:g}, alpha {i['alpha']:g}",
            f"  Formula: {scores['formula']}",
            f"  With {i['raters']} raters per output{src('raters')}: {scores['items']} items "
            f"(normal approximation {scores['items_normal']:.1f}), power {scores['power_reached']:.3f}, "
            f"{scores['total_ratings']} ratings",
            "  raters  items  normal approx.  power  total ratings",
        ]
        lines += [f"  {r['raters']:>6}  {r['items']:>5}  {r['items_normal']:>14.1f}  {r['power']:.3f}  "
                  f"{r['total_ratings']:>13}" for r in scores["table"]]
    pairwise = plan["pairwise"]
    if pairwise:
        i = pairwise["inputs"]
        given = (f"Bradley–Terry difference {i['bt_diff']:g} -> win probability {pairwise['win_prob']:.3f}"
                 if i["bt_diff"] is not None else f"win probability {pairwise['win_prob']:.3f}{src('win_prob')}")
        if sources.get("win_prob") == "pilot":
            given += f" (observed for {' vs '.join(pilot['pairwise']['win_rate_pair'])}, the closest pair)"
        lines += [
            "Comparisons: judgements per pair of systems",
            f"  {given}, ties {i['ties']:.3f}{src('ties')}, power {i['power']:g}, alpha {i['alpha']:g}",
            f"  Formula: {pairwise['formula']}",
            f"  {pairwise['decided']} decided judgements (normal approximation {pairwise['decided_normal']:.1f}), "
            f"power {pairwise['power_reached']:.3f}; {pairwise['judgements']} judgements per pair with ties",
        ]
    return "\n".join(lines)
