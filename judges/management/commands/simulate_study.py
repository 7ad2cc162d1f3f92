"""python manage.py simulate_study --preset SLUG [...]: a whole simulated study, rated and judged."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.models import Rating, Study
from annotation.simulation.items import COMPARE_PRESETS, PRESETS
from annotation.simulation.latent import Knobs
from annotation.simulation.study import simulated_study_create
from annotation.services.studies import StudyError
from config.commands import ConcordCommand
from judges.models import JudgeRun
from judges.simulation import simulated_judges_run

HELP = """Create a study from a seed preset with synthetic items that look like the protocol's data,
let R simulated raters rate it through the workspace's own services (assignment, shuffle,
counterbalancing, submit), and run J LLM judges on it through the real judge pipeline (Celery
chunks, backend, parsing) against the loopback OpenAI-compatible fake server, which answers in
the preset's own output format.

Every answer comes from a latent true quality per output (z units: one unit is one SD of quality)
plus a per-rater bias (--rater-bias), per-answer noise (--noise) and an optional bonus for the
response shown first (--position-bias). --noise 0 --rater-bias 0 gives perfect agreement. Judges
are simulated the same way (their own bias and noise), and a share --malformed of their answers
carries no verdict (stored raw, counted as unparsed). Everything is a function of --seed, so two
runs with the same seed give the same values (with --position-bias the shown orders come from the
assignment engine, so position-dependent values may differ between runs).

Judge chunks: with --worker auto (default) they go to a Celery worker when one consumes the
`judges` queue (checked with a 1 s ping), else they run in this process through Celery's eager
mode (the same task code); --worker yes waits for a worker, --worker no always runs them here.
The fake server runs inside this command, so it stays until the runs end."""


class Command(ConcordCommand):
    help = HELP

    def create_parser(self, *args, **kwargs):
        from argparse import RawDescriptionHelpFormatter

        parser = super().create_parser(*args, **kwargs)
        parser.formatter_class = RawDescriptionHelpFormatter
        return parser

    def add_arguments(self, parser):
        parser.add_argument("--preset", required=True, choices=PRESETS + COMPARE_PRESETS,
                            help="preset (rubric) slug: a seed protocol or a comparative preset")
        parser.add_argument("--items", type=int, default=20, help="items to generate (default 20)")
        parser.add_argument("--raters", type=int, default=3, help="simulated rater accounts (default 3)")
        parser.add_argument("--judges", type=int, default=2, help="simulated judge runs (default 2; 0 for none)")
        parser.add_argument("--noise", type=float, default=0.5, help="SD of each answer's error, z units (0.5)")
        parser.add_argument("--rater-bias", type=float, default=0.3, help="SD of each rater's leniency, z units (0.3)")
        parser.add_argument("--position-bias", type=float, default=0.0,
                            help="added to the response shown first, z units (default 0)")
        parser.add_argument("--malformed", type=float, default=0.05,
                            help="share of judge answers without a verdict, 0..1 (default 0.05)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--slug", default="", help="study slug (default sim-PRESET-sSEED)")
        parser.add_argument("--raters-per-item", type=int, default=None,
                            help="the study's raters per item (default: --raters, so every rater rates every item)")
        parser.add_argument("--worker", choices=("auto", "yes", "no"), default="auto",
                            help="where judge chunks run (see above; default auto)")

    def handle(self, *args, **o):
        problems = []
        if o["items"] < 1:
            problems.append("--items must be at least 1")
        if o["raters"] < 1:
            problems.append("--raters must be at least 1")
        if o["judges"] < 0:
            problems.append("--judges must be 0 or more")
        for name in ("noise", "rater_bias"):
            if o[name] < 0:
                problems.append(f"--{name.replace('_', '-')} is a standard deviation: it must be 0 or more")
        if not 0 <= o["malformed"] <= 1:
            problems.append("--malformed is a share: it must be between 0 and 1")
        if o["raters_per_item"] is not None and o["raters_per_item"] < 1:
            problems.append("--raters-per-item must be at least 1")
        slug = o["slug"] or f"sim-{o['preset']}-s{o['seed']}"
        if Study.objects.filter(slug=slug).exists():
            problems.append(f"--slug: a study {slug!r} already exists (choose another --slug)")
        if problems:
            raise CommandError("; ".join(problems))
        knobs = Knobs(noise=o["noise"], rater_bias=o["rater_bias"], position_bias=o["position_bias"],
                      malformed=o["malformed"])
        admin = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
        try:
            sim = simulated_study_create(preset=o["preset"], slug=slug, n_items=o["items"], n_raters=o["raters"],
                                         seed=o["seed"], knobs=knobs, raters_per_item=o["raters_per_item"],
                                         admin=admin)
        except (StudyError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        study = sim.study
        n_ratings = Rating.objects.filter(assignment__study=study).count()
        self.stdout.write(f"study {study.slug}: {study.items.count()} items, {len(sim.raters)} raters "
                          f"({', '.join(u.username for u in sim.raters)}), {sim.submits} submits, "
                          f"{n_ratings} ratings")
        runs = simulated_judges_run(study=study, preset=o["preset"], n_judges=o["judges"], knobs=knobs,
                                    seed=o["seed"], worker=o["worker"])
        for run in runs:
            self.stdout.write(f"judge run {run.pk} {run.name}: {run.status}, {run.n_scored} scored, "
                              f"{run.n_unparsed} unparsed, {run.n_error} errors of {run.n_expected}")
        self.stdout.write(f"report: /studies/{study.slug}/report/  judges: /judges/studies/{study.slug}/  "
                          f"datasets: /studies/{study.slug}/datasets/")
        if any(run.status not in JudgeRun.FINISHED for run in runs):
            raise CommandError("a judge run did not finish (see its error on the study's judges page)")
