import time

from django.core.management.base import CommandError

from annotation.models import Study
from config.commands import ConcordCommand
from judges.models import JudgeConfig, JudgeRun
from judges.selectors import run_progress
from judges.services.runs import JudgeRunError, judge_run_start


class Command(ConcordCommand):
    help = ("Start a judge run on a study: its chunks go to the judge's Celery queue. "
            "With --wait, print progress until the run ends: exit status 1 unless it is done (a run done "
            "with errors or failed too, unless --allow-errors).")

    def add_arguments(self, parser):
        parser.add_argument("--study", help="study slug")
        parser.add_argument("--judge", action="append",
                            help="judge configuration name (see load_judge); give several with --ensemble")
        parser.add_argument("--dry-run", action="store_true",
                            help="print the estimate (calls, input tokens, most output tokens, cost, time at the "
                                 "judge's limits) and start nothing")
        parser.add_argument("--max-cost-usd", type=float, default=None,
                            help="cap in USD for the run (default: the judge's method_options.max_cost_usd); with "
                                 "--run, the new cap of that run: a run paused on its cap resumes")
        parser.add_argument("--run", type=int, default=None, help="an existing run (with --max-cost-usd)")
        parser.add_argument("--ensemble", choices=["weighted"],
                            help="seed 003: a weighted vote of the given judges (each must be label, legacy or "
                                 "modular); the coordinator judge ensemble-<names> is created or updated")
        parser.add_argument("--weights", default=None,
                            help="with --ensemble: 'gold' (each judge's accuracy in its own latest run on the "
                                 "study) or one number per judge, comma-separated (default: equal)")
        parser.add_argument("--wait", action="store_true", help="follow the run until it ends")
        parser.add_argument("--allow-errors", action="store_true",
                            help="with --wait: exit 0 for a run done with errors (some slots failed) or failed "
                                 "(no call succeeded)")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between progress lines")
        parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after this many seconds")

    def handle(self, *args, study: str | None, judge: list[str] | None, wait: bool, interval: float,
               timeout: float, ensemble: str | None = None, weights: str | None = None, dry_run: bool = False,
               max_cost_usd: float | None = None, run: int | None = None, allow_errors: bool = False, **options):
        if run is not None:
            return self._set_cap(run, max_cost_usd)
        if not study or not judge:
            raise CommandError("--study and --judge are required (or --run ID --max-cost-usd X)")
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
        if dry_run:
            return self._dry_run(target, config)
        try:
            run = judge_run_start(study=target, judge=config, max_cost_usd=max_cost_usd)
        except JudgeRunError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"estimate: {run.estimate['calls']} calls, {run.estimate['input_tokens']} input tokens, "
                          f"at most ${run.estimate['max_cost_usd']:.4f}"
                          + (f"; cap ${run.cost_cap_usd:.4f}" if run.cost_cap_usd is not None else ""))
        if run.config.get("members"):
            w = run.config.get("ensemble_weights") or (run.config.get("method_options") or {}).get("weights")
            self.stdout.write(f"weighted ensemble {config.name}: members {', '.join(judge)}; weights {w or 'equal'}")
        if run.reused_from_id:
            self.stdout.write(f"reused {run.n_reused} scores of run {run.reused_from_id}: the same judge as the "
                              f"provider sees it (endpoint, key variable, model, prompt, sampling, method, rubric); "
                              f"no model was asked for them")
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
            self.stderr.write(run.error_shown)  # a key the provider echoed back, masked
        if run.status == JudgeRun.Status.PAUSED:
            raise CommandError(f"run {run.pk} {run.pause_reason} (run_judge --run {run.pk} --max-cost-usd X)")
        if run.status in (JudgeRun.Status.DONE_WITH_ERRORS, JudgeRun.Status.FAILED):
            failed = f"{run.n_error} of {run.n_expected} slots failed" if run.n_error else "no slot was judged"
            what = f"run {run.pk} ended {run.status} ({run.get_status_display().lower()}): {failed}"
            if not allow_errors:
                raise CommandError(f"{what}; resume it to judge them again (or --allow-errors)")
            self.stderr.write(what)
        elif run.status != JudgeRun.Status.DONE:
            raise CommandError(f"run {run.pk} ended {run.status}")
        self.stdout.write(f"files: {', '.join(['report.txt', 'labeled.csv', 'errors.txt', 'correct.txt'])} "
                          f"under judge_runs/{run.pk}/")

    def _dry_run(self, study: Study, judge: JudgeConfig) -> None:
        from judges.services.estimate import estimate_lines, run_estimate
        from judges.services.runs import judge_config_snapshot

        try:
            est = run_estimate(study=study, config=judge_config_snapshot(judge, study))
        except (JudgeRunError, ValueError, KeyError) as exc:
            raise CommandError(f"could not estimate this run: {exc}") from exc
        self.stdout.write(f"dry run of {judge.name} on {study.slug} ({est['items']} items): nothing is sent")
        for line in estimate_lines(est):
            self.stdout.write(f"  {line}")

    def _set_cap(self, pk: int, max_cost_usd: float | None) -> None:
        from judges.services.budget import BudgetError, judge_run_set_cap

        target = JudgeRun.objects.filter(pk=pk).first()
        if target is None:
            raise CommandError(f"no run {pk}")
        try:
            target = judge_run_set_cap(run=target, max_cost_usd=max_cost_usd)
        except BudgetError as exc:
            raise CommandError(str(exc)) from exc
        cap = f"${target.cost_cap_usd:.4f}" if target.cost_cap_usd is not None else "none"
        self.stdout.write(f"run {target.pk}: cap {cap}; {target.status}")

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
