"""Judge pages (htmx): judge configurations, a study's runs with live progress, gold evaluation,
sending doubtful items to humans.

Admins do everything; a study's researchers read its runs, files and gold evaluation;
annotators and outsiders get 404 everywhere (annotation.access decides).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.access import Can, can, get_study_for_admin, get_study_for_reader, is_admin
from annotation.importers import ItemFileError
from annotation.models import Item, Study
from config.limits import limit, upload_problem
from config.parsers import BadNumber, parse_int, parse_number, whole_number
from judges.config import JudgeConfigError
from judges.models import JudgeConfig, JudgeRun
from judges.selectors import judges_by_study, judges_for_study, run_key_comparison, run_progress, study_runs
from judges.services.configs import judge_configs_load
from judges.services.doubt import SIGNALS, Thresholds
from judges.services.handoff import HandoffError, doubtful_send_to_study, find_doubtful
from judges.services.budget import BudgetError, judge_run_set_cap
from judges.services.estimate import estimate_lines, run_estimate
from judges.services.runs import (
    JudgeRunError, judge_config_snapshot, judge_run_cancel, judge_run_resume, judge_run_start,
)

# Routing, juries, gold and run files (numpy, pandas, scipy, matplotlib) are imported by the views that use
# them, not with the URL conf: every web worker, Celery worker and manage.py command would load them at start.


def _require_admin(request: HttpRequest) -> None:
    if not is_admin(request.user):
        raise Http404("No such page")


def _run_for(request: HttpRequest, pk: int, *, write: bool = False) -> JudgeRun:
    run = get_object_or_404(JudgeRun.objects.select_related("study__rubric_version", "judge"), pk=pk)
    if not (is_admin(request.user) if write else can(request.user, run.study, Can.READ)):
        raise Http404("No such run")
    return run


# ------------------------------------------------------------------------------------- configurations

@login_required
def judge_list(request: HttpRequest) -> HttpResponse:
    _require_admin(request)
    return render(request, "judges/list.html", {"groups": judges_by_study(), "studies": Study.objects.all()})


@login_required
@require_POST
def judge_load(request: HttpRequest) -> HttpResponse:
    """Add or update judges from an uploaded YAML/JSON file or pasted text; all or nothing."""
    _require_admin(request)
    upload = request.FILES.get("file")
    pasted = request.POST.get("text", "")
    if too_large := (upload_problem("upload.judges", upload, name="judges file") if upload
                     else _pasted_problem(pasted)):  # before the file is read
        return render(request, "judges/list.html", {"groups": judges_by_study(), "errors": [("", too_large)]},
                      status=400)
    try:
        text = upload.read().decode("utf-8") if upload else pasted
    except UnicodeDecodeError:
        messages.error(request, "The file is not UTF-8 text.")
        return redirect("judges:list")
    if not text.strip():
        messages.error(request, "Upload a YAML file or paste a configuration.")
        return redirect("judges:list")
    try:
        saved = judge_configs_load(text=text, filename=upload.name if upload else "")
    except JudgeConfigError as exc:
        return render(request, "judges/list.html", {"groups": judges_by_study(), "errors": exc.errors,
                                                    "text": text}, status=400)
    messages.success(request, "Saved: " + ", ".join(j.name for j, _ in saved))
    return redirect("judges:list")


def _pasted_problem(text: str) -> str | None:
    size, most = len(text.encode("utf-8")), limit("upload.judges")
    return f"judges configuration: at most {most:,} bytes (this has {size:,})" if size > most else None


# ------------------------------------------------------------------------------------- a study's runs

def _run_context(request: HttpRequest, run: JudgeRun) -> dict:
    from judges.services.files import RUN_FILES

    return {"run": run, "p": run_progress(run), "can_write": is_admin(request.user),
            "files": RUN_FILES, "key": run_key_comparison(run)}


def _routing_context(study: Study) -> dict:
    from annotation.reports.stats import criterion_measure
    from judges.models import StudyRouting
    from judges.routing_plot import intervals_over_time
    from judges.services.routing import REASON_WORDS

    routing = StudyRouting.objects.filter(study=study).first()
    state = routing.state if routing else {}
    return {"routing": routing, "routing_state": state,
            "routing_reasons": [(REASON_WORDS.get(k, k), n) for k, n in (state.get("routed") or {}).get("reasons", {}).items()],
            "routing_plot": intervals_over_time(state) if state else None,
            "routing_comparisons": "\n".join(" vs ".join(c) for c in (routing.comparisons if routing else [])),
            "routing_criteria": [c for c in study.rubric.get("criteria", []) if criterion_measure(c) == "numeric"],
            "routing_used": (100 * state["n_rated"] / state["budget"]) if state.get("budget") else None}


@login_required
def study_judges(request: HttpRequest, slug: str) -> HttpResponse:
    from judges.services.juries import COMBINE

    study = get_study_for_reader(request.user, slug)
    can_write = is_admin(request.user)
    runs = study_runs(study)
    context = {"study": study, "rows": [_run_context(request, r) for r in runs], "can_write": can_write,
               "judges": judges_for_study(study) if can_write else [], "signals": SIGNALS,
               "targets": Study.objects.filter(rubric_version__rubric=study.rubric_version.rubric)
               .exclude(pk=study.pk).exclude(status=Study.Status.CLOSED) if can_write else [],
               "thresholds": Thresholds(), "combine": COMBINE,
               "finished": [r for r in runs if r.status in JudgeRun.FINISHED], **_routing_context(study)}
    return render(request, "judges/study.html", context)


def _amount(text: str | None) -> float | None:
    """A cap typed in the form: empty is None; anything else a positive number of USD."""
    text = (text or "").strip().lstrip("$")
    if not text:
        return None
    try:
        return parse_number(text, "the cap", positive=True)
    except BadNumber:
        raise JudgeRunError(f"the cap must be an amount of USD above 0, such as 5 or 12.50, not {text[:40]!r}") from None


@login_required
def run_estimate_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The run form's estimate for the chosen judge (an htmx fragment)."""
    study = get_study_for_admin(request.user, slug)
    if not request.GET.get("judge"):  # no judge can score this study: every option is disabled
        return render(request, "judges/study.html#estimate", {})
    try:
        judge = get_object_or_404(JudgeConfig, pk=parse_int(request.GET.get("judge", ""), "judge", minimum=1))
    except BadNumber as exc:  # the judge's id, as the run form sends it
        return HttpResponseBadRequest(f"{exc} (the id of a judge)", content_type="text/plain; charset=utf-8")
    context: dict = {"estimate_judge": judge.name}
    try:
        est = run_estimate(study=study, config=judge_config_snapshot(judge, study))
        context["estimate_lines"] = estimate_lines(est)
    except (ValueError, KeyError) as exc:
        context["estimate_error"] = str(exc)
    return render(request, "judges/study.html#estimate", context)


@login_required
@require_POST
def run_start(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_admin(request.user, slug)
    judge = JudgeConfig.objects.filter(pk=whole_number(request.POST.get("judge", "")) or 0).first()
    if judge is None:
        messages.error(request, "Pick a judge.")
    else:
        try:
            run = judge_run_start(study=study, judge=judge, user=request.user,
                                  max_cost_usd=_amount(request.POST.get("max_cost_usd")))
        except JudgeRunError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Run {run.pk} of {judge.name} queued: {run.n_expected} judgements.")
    return redirect("judges:study", slug=study.slug)


@login_required
@require_POST
def jury_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Combine finished runs into a jury (a run of its own; no model is asked)."""
    from judges.services.juries import jury_create

    study = get_study_for_admin(request.user, slug)
    chosen = {whole_number(x) for x in request.POST.getlist("runs")}
    runs = [r for r in study_runs(study) if r.pk in chosen]
    try:
        quorum = parse_int(request.POST["quorum"], "quorum", minimum=1) if request.POST.get("quorum") else None
        jury = jury_create(study=study, runs=runs, combine=request.POST.get("combine", "mean"), quorum=quorum,
                           name=request.POST.get("name", "").strip(), user=request.user)
    except ValueError as exc:  # JuryError, or a quorum that is not a number
        messages.error(request, f"No jury formed: {exc}")
    else:
        alpha = ", ".join(f"{k} {v:.2f}" for k, v in jury.config["inter_judge_alpha"].items() if v is not None)
        messages.success(request, f"Run {jury.pk}: {jury.name} of {len(runs)} judges, {jury.n_scored} verdicts, "
                         f"{jury.n_unparsed} left open" + (f"; agreement between the judges (α): {alpha}" if alpha
                                                          else ""))
    return redirect("judges:study", slug=study.slug)


@login_required
@require_POST
def routing_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Set the study's routing (budget, comparisons to decide) and refresh it now."""
    from judges.services.routing import (
        RoutingError, parse_comparisons, routing_configure, routing_refresh, study_systems,
    )

    study = get_study_for_admin(request.user, slug)
    data = request.POST
    try:
        budget = data.get("human_budget", "").strip()
        if budget and not budget.isdigit():
            raise RoutingError(f"human budget: a whole number of items, 1 or more (got {budget!r})")
        configure = routing_configure(study=study, enabled=data.get("enabled") == "on",
                                      human_budget=int(budget) if budget else None,
                                      comparisons=parse_comparisons(data.get("comparisons", ""), study_systems(study)),
                                      criterion=data.get("criterion", ""), auto_pause=data.get("auto_pause") == "on")
    except RoutingError as exc:
        messages.error(request, f"Routing not changed: {exc}")
        return redirect(f"{reverse('judges:study', args=[study.slug])}#routing")
    state = routing_refresh(study=study) if configure.enabled else {}
    if not configure.enabled:
        messages.success(request, "Routing is off: items are served in each rater's random order.")
    else:
        messages.success(request, f"Routing on: {state['routed']['items']} items served first"
                         + (f"; study paused: {state['stopped']}" if state.get("stopped") else ""))
    return redirect(f"{reverse('judges:study', args=[study.slug])}#routing")


@login_required
def run_progress_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for(request, pk)
    return render(request, "judges/study.html#run", _run_context(request, run))


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = judge_run_cancel(run=_run_for(request, pk, write=True))
    if request.htmx:
        return render(request, "judges/study.html#run", _run_context(request, run))
    return redirect("judges:study", slug=run.study.slug)


@login_required
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for(request, pk, write=True)
    try:
        run = judge_run_resume(run=run)
    except JudgeRunError as exc:
        if request.htmx:
            return HttpResponse(str(exc), status=409)
        messages.error(request, str(exc))
    if request.htmx:
        return render(request, "judges/study.html#run", _run_context(request, run))
    return redirect("judges:study", slug=run.study.slug)


@login_required
@require_POST
def run_cap(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the run's cap; a run paused on its cap resumes."""
    run = _run_for(request, pk, write=True)
    try:
        run = judge_run_set_cap(run=run, max_cost_usd=_amount(request.POST.get("max_cost_usd")))
    except (JudgeRunError, BudgetError) as exc:
        if request.htmx:
            return HttpResponse(str(exc), status=400)
        messages.error(request, str(exc))
    if request.htmx:
        return render(request, "judges/study.html#run", _run_context(request, run))
    return redirect("judges:study", slug=run.study.slug)


@login_required
def run_file_view(request: HttpRequest, pk: int, name: str) -> FileResponse:
    from judges.services.files import RUN_FILES, run_file

    run = _run_for(request, pk)
    if name not in RUN_FILES:
        raise Http404("No such file")
    path = run_file(run, name)
    ctype = "text/csv; charset=utf-8" if name.endswith(".csv") else "text/plain; charset=utf-8"
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"run{run.pk}-{name}", content_type=ctype)


# ------------------------------------------------------------------------------------- gold evaluation

@login_required
@require_http_methods(["GET", "POST"])
def gold_view(request: HttpRequest, slug: str) -> HttpResponse:
    """Seed 003's table over the chosen runs: from the items' gold, or from an uploaded id,label CSV.

    An upload is only read (never stored), so researchers may evaluate too.
    """
    from judges.services import gold as gold_svc

    study = get_study_for_reader(request.user, slug)
    runs = [r for r in study_runs(study) if r.n_expected]
    chosen = request.POST.getlist("runs") or request.GET.getlist("runs")
    if chosen:
        runs = [r for r in runs if str(r.pk) in chosen]
    criteria = gold_svc.label_criteria(study)
    data = request.POST if request.method == "POST" else request.GET
    criterion = data.get("criterion") or (criteria[0]["key"] if criteria else None)
    context = {"study": study, "criteria": criteria, "criterion": criterion, "runs": study_runs(study),
               "chosen": chosen, "positive": data.get("positive", "")}
    status = 200
    try:
        gold = None
        if request.method == "POST" and (upload := request.FILES.get("gold")):
            if too_large := upload_problem("upload.gold", upload, name="gold file"):  # before it is read
                raise gold_svc.GoldError(too_large)
            gold = gold_svc.gold_from_csv(upload.read())
        context["table"] = gold_svc.evaluation_table(study, runs, criterion=criterion, gold=gold,
                                                     positive=data.get("positive") or None)
    except gold_svc.GoldError as exc:
        context["error"] = str(exc)
        status = 400 if request.method == "POST" else 200
    return render(request, "judges/gold.html", context, status=status)


# ------------------------------------------------------------------------------------- judges and humans

def _thresholds(data) -> Thresholds:
    base = Thresholds()
    values = {}
    for name in ("min_top_prob", "max_spread", "min_agreement", "min_range"):
        try:
            values[name] = parse_number(data.get(name, getattr(base, name)), name)
        except BadNumber:
            values[name] = getattr(base, name)
    return Thresholds(**values)


@login_required
@require_http_methods(["GET", "POST"])
def doubt_view(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: which items the chosen runs are unsure about (researchers too). POST (admins): send them to a study."""
    study = get_study_for_reader(request.user, slug)
    data = request.POST if request.method == "POST" else request.GET
    all_runs = [r for r in study_runs(study) if r.status in (*JudgeRun.FINISHED, JudgeRun.Status.CANCELLED)]
    chosen = data.getlist("runs")
    runs = [r for r in all_runs if not chosen or str(r.pk) in chosen]
    signals = [s for s in data.getlist("signals") if s in SIGNALS] or list(SIGNALS)
    thresholds = _thresholds(data)
    if request.method == "POST":
        study = get_study_for_admin(request.user, slug)
        target = Study.objects.select_related("rubric_version").filter(pk=data.get("target") or 0).first()
        if target is None:
            messages.error(request, "Pick the study the humans will rate in.")
            return redirect("judges:study", slug=study.slug)
        try:
            result = doubtful_send_to_study(source=study, runs=runs, target=target, thresholds=thresholds,
                                            signals=signals)
        except (HandoffError, ItemFileError) as exc:
            messages.error(request, str(exc))
        else:
            (messages.success if result.sent else messages.warning)(request, f"{target.name}: {result.summary}")
        return redirect("judges:study", slug=study.slug)
    flagged = find_doubtful(runs, thresholds, signals) if runs else {}
    names = dict(Item.objects.filter(pk__in=flagged).values_list("pk", "external_id"))
    rows = sorted(({"item": names.get(k, k), "reasons": v["reasons"], "n_slots": len(v["slots"])}
                   for k, v in flagged.items()), key=lambda r: r["item"])
    return render(request, "judges/doubt.html", {"study": study, "rows": rows, "runs": all_runs,
                                                 "signals": signals, "thresholds": thresholds})
