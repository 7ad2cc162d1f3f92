import time

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from judges.models import JudgeConfig, JudgeRun
from judges.selectors import run_progress
from judges.services.runs import JudgeRunError, judge_run_start


class Command(BaseCommand):
    help = ("Start a judge run on a study: its chunks go to the judge's Celery queue. "
            "With --wait, print progress until the run ends (exit status 1 unless it is done).")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="study slug")
        parser.add_argument("--judge", required=True, action="append",
                            help="judge configuration name (see load_judge); give several with --ensemble")
        parser.add_argument("--ensemble", choices=["weighted"],
                            help="seed 003: a weighted vote of the given judges (each must be label, legacy or "
                                 "modular); the coordinator judge ensemble-<names> is created or updated")
        parser.add_argument("--weights", default=None,
                            help="with --ensemble: 'gold' (each judge's accuracy in its own latest run on the "
                                 "study) or one number per judge, comma-separated (default: equal)")
        parser.add_argument("--wait", action="store_true", help="follow the run until it ends")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between progress lines")
        parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after this many seconds")

    def handle(self, *args, study: str, judge: list[str], wait: bool, interval: float, timeout: float,
               ensemble: str | None = None, weights: str | None = None, **options):
        target = Study.objects.select_related("rubric_version").filter(slug=study).first()
        if target is None:
            raise CommandError(f"no study with slug {study!r}")
        if ensemble:
            config = self._ensemble(judge, weights)
        elif len(judge) > 1 or weights:
            raise CommandError("several --judge or --weights go with --ensemble weighted")
        else:
            config = JudgeConfig.objects.filter(name=judge[0]).first()
            if config is None:
                raise CommandError(f"no judge named {judge[0]!r} (add one with load_judge FILE)")
        try:
            run = judge_run_start(study=target, judge=config)
        except JudgeRunError as exc:
            raise CommandError(str(exc)) from exc
        if run.config.get("members"):
            w = run.config.get("ensemble_weights") or (run.config.get("method_options") or {}).get("weights")
            self.stdout.write(f"weighted ensemble {config.name}: members {', '.join(judge)}; weights {w or 'equal'}")
        self.stdout.write(f"run {run.pk}: {run.n_expected} slots ({run.n_outputs} outputs x "
                          f"{', '.join(run.criteria) or 'pairs'}) queued on {run.config.get('queue')}")
        if not wait:
            return
        start = time.monotonic()
        while True:
            run.refresh_from_db()
            p = run_progress(run)
            rate = f"{p.rate:.2f}/s" if p.rate else "-"
            eta = f"{p.eta_s:.0f}s" if p.eta_s is not None else "-"
            self.stdout.write(f"[{p.status}] {p.done}/{p.expected} ({p.percent:.1f}%) scored {p.scored} "
                              f"unparsed {p.unparsed} truncated {p.truncated} error {p.error}  {rate}  ETA {eta}  "
                              f"tokens {p.tokens_in}/{p.tokens_out}  ${p.cost_usd:.4f}")
            if not p.active:
                break
            if timeout and time.monotonic() - start > timeout:
                raise CommandError(f"run {run.pk} still {run.status} after {timeout:.0f}s")
            time.sleep(interval)
        if run.error:
            self.stderr.write(run.error)
        if run.status != JudgeRun.Status.DONE:
            raise CommandError(f"run {run.pk} ended {run.status}")
        self.stdout.write(f"files: {', '.join(['report.txt', 'labeled.csv', 'errors.txt', 'correct.txt'])} "
                          f"under judge_runs/{run.pk}/")

    @staticmethod
    def _ensemble(names: list[str], weights: str | None) -> JudgeConfig:
        from judges.config import JudgeConfigError
        from judges.services.configs import ensemble_config_save

        parsed: list[float] | str | None = None
        if weights == "gold":
            parsed = "gold"
        elif weights:
            try:
                parsed = [float(w) for w in weights.split(",")]
            except ValueError as exc:
                raise CommandError(f"--weights: 'gold' or comma-separated numbers, not {weights!r}") from exc
        try:
            return ensemble_config_save(members=list(names), weights=parsed)
        except JudgeConfigError as exc:
            raise CommandError(str(exc)) from exc
