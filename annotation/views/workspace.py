"""The annotator workspace: one item at a time, blinded, keyboard-first.

    GET  /studies/<slug>/rate/                     the rater's current or next item (or a done screen)
    GET  /studies/<slug>/rate/<token>/             one of the rater's own assignments (revise a submitted one)
    POST /studies/<slug>/rate/<token>/draft/       autosave (no validation)
    POST /studies/<slug>/rate/<token>/submit/      validate and store; then the next item
    GET  /studies/<slug>/rate/guidelines/          the rubric's guidelines (htmx fragment or page)
    GET  /studies/<slug>/rate/history/             the rater's submitted items, to revise

Blinding: responses are addressed by their shown number (Response 1..K) and assignments by a random
token. No output id, system name, item id or other rater's answer is ever put in the context.
"""

from __future__ import annotations

import contextlib

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from annotation import step_questions
from annotation.models import Assignment, Item, Output, Study
from annotation.questionnaires import question_fields
from annotation.rendering import render_content, render_markdown
from annotation.services import comparative
from annotation.services.phases import PhaseOrderError, phase_require, phase_state
from annotation.services.ratings import (
    AnswerError,
    SubmitError,
    answers_from_form,
    assignment_save_draft,
    assignment_submit,
    field_name,
)
from annotation.services.training import training_state
from annotation.trajectory import rater_excerpt
from annotation.views.crowd import crowd_context
from annotation.views.language import rater_study, rater_study_and_assignment
from rubrics.schema import COMPARATIVE_KINDS, SCALE_KINDS

PAGE = "annotation/workspace.html"

# ---------------------------------------------------------------- what the screen shows

# A form or item posted out of the phase order (Back, a second tab): the rater is shown where they are.
NOT_YOUR_STEP = gettext_lazy("That form is not your step now: here is where you are.")
# The pairwise strengths' labels (the platform's words; the stored value is the key).
STRENGTH_LABELS = {"slightly": gettext_lazy("Slightly better"), "clearly": gettext_lazy("Clearly better")}
# The criterion kinds as the guidelines name them to raters.
KIND_LABELS = {"likert": gettext_lazy("scale"), "numeric": gettext_lazy("number"), "choice": gettext_lazy("choice"),
               "binary": gettext_lazy("yes or no"), "confidence": gettext_lazy("confidence"),
               "text": gettext_lazy("text"), "spans": gettext_lazy("highlights"),
               "pairwise": gettext_lazy("comparison of two"), "ranking": gettext_lazy("ranking"),
               "best_worst": gettext_lazy("best and worst")}


@dataclass
class Control:
    """One criterion's input for one response (or for the item)."""

    name: str
    criterion: dict
    widget: str  # segmented | slider | number | choice | binary | text | spans | pairwise | ranking | best_worst
    value: str = ""
    reasoning: str = ""
    error: str = ""
    reasoning_error: str = ""
    options: list[dict] = field(default_factory=list)
    spans_json: str = "[]"
    rows: list[dict] = field(default_factory=list)  # comparative widgets: one row per response shown
    strengths: list[dict] = field(default_factory=list)  # pairwise with strength
    show_hint: bool = True  # off when the criterion above already shows the same hint
    slider: dict = field(default_factory=dict)  # the slider widget: bounds, step, ticks, level labels

    @property
    def dom_id(self) -> str:
        return self.name.replace("__", "-")

    @property
    def has_labels(self) -> bool:
        return any(o.get("label") for o in self.options)

    @property
    def has_descriptions(self) -> bool:
        return any(o.get("description") for o in self.options)

    @property
    def sparse_anchors(self) -> bool:
        """Only some levels are described (e.g. 0, 4, 6, 8, 10): those anchors are listed in full."""
        return self.has_descriptions and not all(o.get("description") for o in self.options)


@dataclass
class ResponseView:
    number: int
    kind: str
    html: Any
    controls: list[Control]
    has_spans: bool


def _entry(draft: dict, response: int | None, key: str) -> dict:
    block = draft.get("item", {}) if response is None else draft.get("responses", {}).get(str(response), {})
    entry = block.get(key)
    if isinstance(entry, dict) and "value" in entry:
        return entry
    return {"value": entry, "reasoning": ""} if entry is not None else {"value": None, "reasoning": ""}


def _scale_options(c: dict, value: str) -> list[dict]:
    levels = {lv["value"]: lv for lv in c.get("levels", [])}
    sparing = set(c.get("sparing_values", []))
    out = []
    for v in range(c["min"], c["max"] + 1):
        lv = levels.get(v, {})
        out.append({"value": str(v), "label": lv.get("label", ""), "description": lv.get("description", ""),
                    "sparing": v in sparing, "checked": value == str(v)})
    return out


SLIDER_TICKS_ALL = 21  # up to this many points every point gets a tick and its number; beyond, every tenth


def _slider(c: dict, value: str) -> dict:
    """A slider's ticks (at = percent along the track), the level labels at their points, and the
    text a screen reader hears for the value (its level label when it has one)."""
    lo, hi = c["min"], c["max"]
    step = c.get("step", 1) if c["kind"] == "numeric" else 1
    n = int(round((hi - lo) / step)) + 1
    every = 1 if n <= SLIDER_TICKS_ALL else max(1, round(10 / step))
    levels = {lv["value"]: lv for lv in c.get("levels", [])}
    ticks = []
    for k in range(n):
        v = lo + k * step
        v = int(v) if float(v).is_integer() else round(v, 6)
        lv = levels.get(v, {})
        if k % every == 0 or k == n - 1 or lv.get("label"):
            ticks.append({"value": v, "at": round(100 * k / (n - 1), 4), "label": lv.get("label", ""),
                          "end": k in (0, n - 1),
                          "minor": n > SLIDER_TICKS_ALL and k % (2 * every) != 0 and k not in (0, n - 1)})
    texts = {str(v): (f"{v}, {lv['label']}" if lv.get("label") else str(v)) for v, lv in levels.items()}
    return {"min": lo, "max": hi, "step": step, "ticks": ticks, "texts_json": json.dumps(texts),
            "valuetext": texts.get(value, value) if value else _("not set")}


def _widget(c: dict) -> str:
    kind = c["kind"]
    if kind in SCALE_KINDS and c.get("widget") == "slider":
        return "slider"
    if kind == "likert":
        return "segmented"
    if kind == "confidence":  # a wide scale (seed 000's 0-100 percentage) is typed, not 101 buttons
        return "segmented" if c["max"] - c["min"] <= 10 else "number"
    if kind == "numeric":
        step = c.get("step", 1)
        n_points = (c["max"] - c["min"]) / step + 1
        return "segmented" if step == 1 and n_points <= 11 else "number"
    if kind in COMPARATIVE_KINDS:
        return kind
    return {"choice": "choice", "binary": "binary", "text": "text", "spans": "spans"}[kind]


def _comparative_control(control: Control, raw, n_shown: int) -> Control:
    """Rows of a pairwise, ranking or best-worst widget, checked as the draft has them (by shown number)."""
    raw = raw if isinstance(raw, dict) else {}
    kind = control.criterion["kind"]
    if kind == "pairwise":
        winner = str(raw.get("winner") or "")
        control.value = winner
        control.options = [{"value": "1", "label": _("Response 1 is better"), "key": "1", "checked": winner == "1"},
                           {"value": "2", "label": _("Response 2 is better"), "key": "2", "checked": winner == "2"}]
        if control.criterion.get("ties"):
            control.options.append({"value": "tie", "label": _("Tie"), "key": "3", "checked": winner == "tie"})
        if control.criterion.get("strength"):
            strength = str(raw.get("strength") or "")
            control.strengths = [{"value": v, "label": STRENGTH_LABELS.get(v, v), "key": v[0].upper(),
                                  "checked": strength == v} for v in comparative.STRENGTHS]
    elif kind == "ranking":
        ranks = raw.get("ranks") if isinstance(raw.get("ranks"), dict) else {}
        rows = [{"n": n, "rank": str(ranks.get(str(n), "") or "")} for n in range(1, n_shown + 1)]
        # Rows stand in the draft's order (ranked first, best first), so a reload shows the list as left.
        rows.sort(key=lambda r: (not r["rank"].isdigit(), int(r["rank"]) if r["rank"].isdigit() else 0, r["n"]))
        control.rows = rows
        control.options = [str(r) for r in range(1, n_shown + 1)]
    else:
        best, worst = str(raw.get("best") or ""), str(raw.get("worst") or "")
        control.rows = [{"n": n, "best": best == str(n), "worst": worst == str(n)} for n in range(1, n_shown + 1)]
    return control


def build_control(c: dict, response: int | None, draft: dict, errors: dict, n_shown: int = 0) -> Control:
    name = field_name(response, c["key"])
    entry = _entry(draft, response, c["key"])
    raw = entry["value"]
    widget = _widget(c)
    control = Control(name=name, criterion=c, widget=widget, reasoning=entry.get("reasoning") or "",
                      error=errors.get(name, ""), reasoning_error=errors.get(f"{name}__reasoning", ""))
    if widget in COMPARATIVE_KINDS:
        return _comparative_control(control, raw, n_shown)
    if widget == "spans":
        spans = raw if isinstance(raw, list) else []
        control.spans_json = json.dumps(spans)
        return control
    control.value = "" if raw is None else str(raw)
    if widget == "segmented":
        control.options = _scale_options(c, control.value)
    elif widget == "slider":
        control.options = _scale_options(c, control.value)  # the level descriptions, shown as anchors
        control.slider = _slider(c, control.value)
    elif widget in ("choice", "binary"):
        keys = {0: "A", 1: "R"} if c["kind"] == "binary" else {}
        control.options = [
            {"value": str(ch["value"]), "label": ch.get("label") or str(ch["value"]),
             "description": ch.get("description", ""), "checked": control.value == str(ch["value"]),
             "key": keys.get(i, str(i + 1)) if c["kind"] == "binary" else str(i + 1)}
            for i, ch in enumerate(c["choices"])
        ]
    return control


def shown_outputs(assignment: Assignment) -> list[Output]:
    by_position = {o.position: o for o in assignment.item.outputs.all()}
    return [by_position[p] for p in assignment.permutation]


def _controls(criteria: list[dict], response: int | None, draft: dict, errors: dict,
              n_shown: int = 0) -> list[Control]:
    controls = [build_control(c, response, draft, errors, n_shown) for c in criteria]
    for above, control in zip(controls, controls[1:]):
        control.show_hint = control.criterion.get("hint") != above.criterion.get("hint")
    return controls


def build_screen(study: Study, assignment: Assignment, *, draft: dict | None = None,
                 errors: dict | None = None) -> dict:
    rubric = study.rubric
    draft = assignment.draft if draft is None else draft
    errors = errors or {}
    item = assignment.item
    output_criteria = [c for c in rubric["criteria"] if c["target"] == "output"]
    item_criteria = [c for c in rubric["criteria"] if c["target"] == "item"]
    spans_on_outputs = any(c["kind"] == "spans" for c in output_criteria)
    responses = []
    for n, output in enumerate(shown_outputs(assignment), start=1):
        responses.append(ResponseView(
            number=n, kind=output.kind,
            html=render_content(output.content, output.kind, span_root=spans_on_outputs, label=_("Response %(n)s") % {"n": n}),
            controls=_controls([q for c in output_criteria for q in step_questions.asked(c, output.content, output.kind)],
                               n, draft, errors),
            has_spans=spans_on_outputs,
        ))
    options = rubric["item_options"]
    return {
        "assignment": assignment,
        "context_html": render_content(item.context, item.context_kind, label=_("Context"),
                                       span_root=any(c["kind"] == "spans" for c in item_criteria)),
        "responses": responses,
        "item_controls": _controls(item_criteria, None, draft, errors, len(responses)),
        "allow_ignore": options.get("allow_ignore", False),
        "ignore_reasons": options.get("ignore_reasons", []),
        "ignored": bool(draft.get("ignored")),
        "ignore_reason": draft.get("ignore_reason", ""),
        "ignore_error": errors.get("ignore_reason", "") or errors.get("ignored", ""),
        "allow_comment": options.get("comment", False),
        "comment": draft.get("comment", ""),
        "errors": errors,
        "side_by_side": study.presentation == Study.Presentation.SIDE_BY_SIDE or len(responses) == 1,
        "revising": assignment.status == Assignment.Status.SUBMITTED,
        "n_responses": len(responses),
        "has_binary": any(c["kind"] == "binary" for c in output_criteria),
        "has_reasoning": any(c.get("reasoning", "none") != "none" for c in rubric["criteria"]),
    }


def rater_progress(study: Study, rater) -> dict:
    """done: the rater's submitted items; left: items the rater could still get (an estimate,
    since other raters fill slots too), counting the one on screen."""
    done = Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.SUBMITTED,
                                     item__is_training=False).count()
    mine = Assignment.objects.filter(item=OuterRef("pk"), rater=rater).exclude(status=Assignment.Status.EXPIRED)
    left = (Item.objects.filter(study=study, is_attention_check=False, slots_taken__lt=study.raters_per_item)
            .exclude(Exists(mine)).count())
    left += Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.ACTIVE,
                                      item__is_training=False).count()
    total = done + left
    return {"done": done, "left": left, "total": total, "percent": round(100 * done / total) if total else 100}


# ---------------------------------------------------------------- views



def load_for_screen(study: Study, assignment: Assignment) -> Assignment:
    """Attach what the screen needs to an assignment from the engine (which loads its item)."""
    assignment.item.load_outputs()
    assignment.study = study
    return assignment


def _render(request: HttpRequest, study: Study, context: dict, *, status: int = 200) -> HttpResponse:
    context = {"study": study, "progress": rater_progress(study, request.user), **context}
    template = f"{PAGE}#workspace" if request.htmx and not request.htmx.boosted else PAGE
    response = render(request, template, context, status=status)
    response["Cache-Control"] = "no-store"  # a shared machine's back button must not show a rating form
    return response


def next_screen(request: HttpRequest, study: Study, *, errors: dict | None = None, answers: dict | None = None,
                 status: int = 200) -> HttpResponse:
    """The participant's phase (annotation.services.phases) as a screen."""
    crowd = crowd_context(request, study)
    now = phase_state(study=study, rater=request.user, crowd=crowd.get("crowd"))
    context = {"state": now.state, "phase": now.data, **crowd, "phase_errors": errors or {},
               "phase_answers": answers or {}}
    if now.state in ("training_failed", "screened_out") and now.training is not None:
        context["training"] = now.training
    if now.assignment is not None:
        training = now.training or training_state(study, request.user)
        context.update(state="rate", training=training if training.required else None,
                       **build_screen(study, load_for_screen(study, now.assignment)))
    elif now.state in ("consent", "instructions"):
        context["phase_html"] = render_markdown(now.data.get("text", ""))
        if now.state == "instructions":
            context["questions"] = question_fields(now.data["check"], answers or {}, errors)
    elif now.state == "questionnaire":
        context["phase_html"] = render_markdown(now.data.get("intro", ""))
        context["questions"] = question_fields(now.data["questions"], answers or {}, errors)
    elif now.state == "done" and now.data.get("completion_text"):
        context["phase_html"] = render_markdown(now.data["completion_text"])
    return _render(request, study, context, status=status)


@login_required
@require_GET
def workspace(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    return next_screen(request, study)


@login_required
@require_GET
def assignment_detail(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    study, assignment = rater_study_and_assignment(request, slug, token)
    if assignment.status == Assignment.Status.EXPIRED:
        messages.info(request, _("That item was returned to the pool after a long pause."))
        return redirect("workspace", slug=study.slug)
    if assignment.status == Assignment.Status.SUBMITTED and not study.is_open:
        messages.info(request, _("The study is closed; submitted ratings can no longer change."))
        return redirect("workspace-history", slug=study.slug)
    return _render(request, study, {"state": "rate", **build_screen(study, assignment)})


def _time_on_task(request: HttpRequest) -> int | None:
    try:
        return max(0, int(request.POST.get("time_on_task_ms", "")))
    except ValueError:
        return None


@login_required
@require_POST
def assignment_draft(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    study, assignment = rater_study_and_assignment(request, slug, token)
    answers = answers_from_form(request.POST, rubric=study.rubric, n_responses=len(assignment.permutation))
    try:
        assignment_save_draft(assignment=assignment, answers=answers, time_on_task_ms=_time_on_task(request))
    except (AnswerError, SubmitError) as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain")
    return HttpResponse("Saved", content_type="text/plain")


@login_required
@require_POST
def assignment_submit_view(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    study, assignment = rater_study_and_assignment(request, slug, token)
    try:
        phase_require(study=study, rater=request.user, assignment=assignment)
    except PhaseOrderError:
        messages.error(request, NOT_YOUR_STEP)  # the reason is for API callers
        return _redirect_to_next(request, study)
    was_revision = assignment.status == Assignment.Status.SUBMITTED
    answers = answers_from_form(request.POST, rubric=study.rubric, n_responses=len(assignment.permutation))
    try:
        assignment_submit(assignment=assignment, answers=answers, time_on_task_ms=_time_on_task(request))
    except AnswerError as exc:
        if not was_revision:  # keep what was typed, even when it cannot be submitted yet
            with contextlib.suppress(AnswerError):  # unless it cannot be stored at all (a NUL character)
                assignment_save_draft(assignment=assignment, answers=answers, time_on_task_ms=_time_on_task(request))
        # 400: the form comes back with each refusal named beside its field (htmx swaps it, see workspace.js)
        return _render(request, study, {"state": "rate", **build_screen(study, assignment, draft=answers,
                                                                        errors=exc.errors)}, status=400)
    except SubmitError as exc:
        messages.error(request, str(exc))
        return _redirect_to_next(request, study)
    if was_revision:
        messages.success(request, _("Your changes are saved."))
    if assignment.item.is_training:  # after each training item: what was expected, and why
        url = reverse("training-feedback", kwargs={"slug": study.slug, "token": assignment.token})
        if request.htmx:
            response = HttpResponse(status=204)
            response["HX-Redirect"] = url
            return response
        return redirect(url)
    return _redirect_to_next(request, study)


def _redirect_to_next(request: HttpRequest, study: Study) -> HttpResponse:
    url = reverse("workspace", kwargs={"slug": study.slug})
    if request.htmx:
        # Swap in the next item directly (one round trip) and put its address in the bar.
        response = next_screen(request, study)
        response["HX-Push-Url"] = url
        return response
    return redirect(url)  # 302 after POST: a reload cannot submit twice


@login_required
@require_GET
def guidelines(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    rubric = study.rubric
    context = {
        "study": study,
        "instructions_html": render_markdown(rubric.get("instructions", "")),
        "study_instructions_html": render_markdown(study.instructions) if study.instructions else "",
        "criteria": [{**c, "kind_label": KIND_LABELS.get(c["kind"], c["kind"])} for c in rubric["criteria"]],
    }
    template = "annotation/workspace_guidelines.html"
    return render(request, f"{template}#guide" if request.htmx else template, context)


def _excerpt(item: Item) -> str:
    text = rater_excerpt(item.context, item.context_kind)
    return text[:140] + ("…" if len(text) > 140 else "")


@login_required
@require_GET
def history(request: HttpRequest, slug: str) -> HttpResponse:
    study = rater_study(request, slug)
    rows = (Assignment.objects.filter(study=study, rater=request.user, status=Assignment.Status.SUBMITTED)
            .select_related("item").order_by("-submitted_at")[:200])
    items = [{"token": a.token, "submitted_at": a.submitted_at, "ignored": a.ignored,
              "excerpt": _excerpt(a.item)} for a in rows]
    return render(request, "annotation/workspace_history.html",
                  {"study": study, "items": items, "progress": rater_progress(study, request.user)})
