"""Annotator API, blinded like the workspace pages: responses are numbered 1..K in the order shown,
assignments are addressed by token, and no system name, output id or other rater's answer appears.

    POST /api/studies/<slug>/rate/next/              -> {"state": <the phase, annotation.services.phases>, ..., "assignment": {...}|null}
    GET  /api/studies/<slug>/rate/<token>/           -> {"state": "rate", "assignment": {...}}
    POST /api/studies/<slug>/rate/<token>/draft/     {"answers": {...}, "time_on_task_ms": 1200} -> {"saved": true}
    POST /api/studies/<slug>/rate/<token>/submit/    {"answers": {...}, "time_on_task_ms": 5400}
         -> 200 {"status": "submitted", "ratings": 15} | 400 {"errors": {field: message}} | 409 {"detail": ...}
    POST /api/studies/<slug>/rate/<token>/submit/?next=1
         -> 200 {"status": "submitted", "ratings": 15, "next": <the body of rate/next/>}: submit and fetch the
            next item in one round trip, as the browser workspace does

`answers` has the shape documented in annotation/services/ratings.py. A repeated submit stores nothing
twice; a later submit while the study is open replaces the answers (a revision).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.authentication import TokenAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.loop_auth import LoopSessionAuthentication, confirm_claim, signed_in_study
from annotation.models import Assignment, Study
from annotation.services.crowd import crowd_state
from annotation.services.phases import PhaseOrderError, PhaseState, phase_require, phase_state
from annotation.services.ratings import AnswerError, SubmitError, assignment_save_draft, assignment_submit
from annotation.trajectory import rater_content
from annotation.views.workspace import load_for_screen, shown_outputs

_RUBRIC_KEYS = ("slug", "name", "description", "instructions", "scope_note", "criteria", "groups", "item_options")


class AnswersSerializer(serializers.Serializer):
    answers = serializers.JSONField()
    time_on_task_ms = serializers.IntegerField(min_value=0, required=False, allow_null=True)


def assignment_payload(study: Study, assignment: Assignment) -> dict:
    """Everything a client needs to show and rate one item, and nothing that unblinds it."""
    rubric = study.rubric
    item = assignment.item
    return {
        "token": str(assignment.token),
        "status": assignment.status,
        "presentation": study.presentation,
        "context": {"content": rater_content(item.context, item.context_kind), "kind": item.context_kind},
        "responses": [{"number": n, "kind": o.kind, "content": rater_content(o.content, o.kind)}
                      for n, o in enumerate(shown_outputs(assignment), start=1)],
        "rubric": {k: rubric.get(k) for k in _RUBRIC_KEYS},
        "answers": assignment.draft,
        "time_on_task_ms": assignment.time_on_task_ms,
    }



def state_payload(study: Study, now: PhaseState) -> dict:
    """A PhaseState as the API gives it: the state's name, what that phase needs, and in `training`
    and `rate` the item to answer."""
    body: dict = {"state": now.state, **now.data, "assignment": None}
    if now.assignment is not None:
        body["assignment"] = assignment_payload(study, load_for_screen(study, now.assignment))
    if now.state == "training" and now.training is not None and now.training.attempt is not None:
        attempt = now.training.attempt
        body["training"] = {"attempt": attempt.number, "answered": attempt.n_answered, "n_items": attempt.n_items,
                            "pass_mark": study.training_pass_mark}
    return body


def next_payload(study: Study, rater) -> dict:
    """The body of rate/next/: the participant's phase (annotation.services.phases) with what it needs."""
    return state_payload(study, phase_state(study=study, rater=rater, crowd=crowd_state(study, rater)))


def _refuse_out_of_order(study: Study, rater, assignment: Assignment) -> Response | None:
    try:
        phase_require(study=study, rater=rater, assignment=assignment)
    except PhaseOrderError as exc:
        return Response({"detail": str(exc), "state": exc.state}, status=status.HTTP_409_CONFLICT)
    return None


class LoopView(APIView):
    """The participant's endpoints: signed in by session (its user read with the study:
    annotation.loop_auth) or by token; each handler starts with signed_in_study."""

    authentication_classes = [LoopSessionAuthentication, TokenAuthentication]
    permission_classes = [permissions.IsAuthenticated]

    def http_method_not_allowed(self, request, *args, **kwargs):
        confirm_claim(request)  # a session that is not signed in hears that first, as on every other route
        return super().http_method_not_allowed(request, *args, **kwargs)


class NextView(LoopView):

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT, summary="The participant's phase and what it needs",
                   description="`state` is one of consent, questionnaire, instructions, training, training_failed "
                               "(`retry_left`), rate, screened_out (`reason`, `return_url`), done, paused, closed. "
                               "training and rate carry the `assignment` to answer; consent its `text`; "
                               "questionnaire `which` (pre|post) and its `questions`; instructions `text`, "
                               "the comprehension `check` and the `attention_policy`. Each is answered through "
                               "its own endpoint; a call out of order gets 409 with the current `state`.")
    def post(self, request: Request, slug: str) -> Response:
        study = signed_in_study(request, slug)
        return Response(next_payload(study, request.user))


class AssignmentView(LoopView):

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="One of the rater's own assignments")
    def get(self, request: Request, slug: str, token) -> Response:
        study, assignment = signed_in_study(request, slug, token)
        return Response({"state": "rate", "assignment": assignment_payload(study, assignment)})


class DraftView(LoopView):

    @extend_schema(request=AnswersSerializer, responses=OpenApiTypes.OBJECT, summary="Autosave a draft")
    def post(self, request: Request, slug: str, token) -> Response:
        study, assignment = signed_in_study(request, slug, token)
        if (refused := _refuse_out_of_order(study, request.user, assignment)) is not None:
            return refused
        body = AnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            assignment_save_draft(assignment=assignment, answers=body.validated_data["answers"],
                                  time_on_task_ms=body.validated_data.get("time_on_task_ms"))
        except AnswerError as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except SubmitError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response({"saved": True})


class SubmitView(LoopView):

    @extend_schema(request=AnswersSerializer, responses=OpenApiTypes.OBJECT, summary="Submit (or revise) ratings",
                   parameters=[OpenApiParameter("next", OpenApiTypes.BOOL, description=(
                       "Also return the next item (the body of rate/next/) under `next`: one round trip per item."))])
    def post(self, request: Request, slug: str, token) -> Response:
        study, assignment = signed_in_study(request, slug, token)
        if (refused := _refuse_out_of_order(study, request.user, assignment)) is not None:
            return refused
        body = AnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            done = assignment_submit(assignment=assignment, answers=body.validated_data["answers"],
                                     time_on_task_ms=body.validated_data.get("time_on_task_ms") or 0)
        except AnswerError as exc:
            return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        except SubmitError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        body = {"status": done.status, "ratings": done.ratings_stored}
        if assignment.item.is_training:  # what was expected, and why, as the page shows after each
            from annotation.views.training import feedback_rows

            assignment.refresh_from_db(fields=["attention_passed"])
            body["training"] = {"right": assignment.attention_passed, "explanation": assignment.item.explanation,
                                "questions": feedback_rows(study, assignment)}
        if request.query_params.get("next", "").lower() in {"1", "true", "yes"}:
            body["next"] = next_payload(study, request.user)
        return Response(body)
