"""The participant phases through the API (annotation.services.phases); each answer returns the
body of rate/next/ (the next phase), so a client walks the study one call per step.

    POST /api/studies/<slug>/consent/                   {"agree": true|false}
    POST /api/studies/<slug>/questionnaire/<pre|post>/  {"answers": {question key: answer}}
    POST /api/studies/<slug>/instructions/              {"answers": {check key: answer}}  (when there is a check)
    POST /api/studies/<slug>/training/retry/            the one retry after a failed training attempt

400 {"errors": {key: message}} for answers that do not fit their questions (nothing is stored);
409 {"detail": ..., "state": <the participant's phase>} for a call out of order.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.loop_auth import signed_in_study
from annotation.questionnaires import AnswersError
from annotation.services.crowd import crowd_state
from annotation.services.phases import PhaseOrderError, phase_consent, phase_instructions, phase_questionnaire
from annotation.services.training import TrainingError, training_retry
from annotation.views.workspace_api import LoopView, next_payload


class ConsentSerializer(serializers.Serializer):
    agree = serializers.BooleanField()


class PhaseAnswersSerializer(serializers.Serializer):
    answers = serializers.DictField(required=False, default=dict)


def _answer(request: Request, study, write) -> Response:
    try:
        write(study)
    except AnswersError as exc:
        return Response({"errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
    except PhaseOrderError as exc:
        return Response({"detail": str(exc), "state": exc.state}, status=status.HTTP_409_CONFLICT)
    except TrainingError as exc:
        return Response({"detail": str(exc), "state": next_payload(study, request.user)["state"]},
                        status=status.HTTP_409_CONFLICT)
    return Response(next_payload(study, request.user))


class ConsentView(LoopView):
    @extend_schema(request=ConsentSerializer, responses=OpenApiTypes.OBJECT, summary="Agree to or decline consent",
                   description="Declining ends the participation (state screened_out, reason consent_declined, "
                               "with the panel's return address); only the decline is kept.")
    def post(self, request: Request, slug: str) -> Response:
        study = signed_in_study(request, slug)
        body = ConsentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _answer(request, study, lambda study: phase_consent(study=study, rater=request.user,
                                                                  agree=body.validated_data["agree"]))


class QuestionnaireView(LoopView):
    @extend_schema(request=PhaseAnswersSerializer, responses=OpenApiTypes.OBJECT,
                   summary="Answer the pre- or post-study questionnaire",
                   description="`which` is pre or post. Answers are checked whole: single (one option), "
                               "multiple (a list of options), number (in its range), text, likert (a point of "
                               "the scale); required questions must be answered.")
    def post(self, request: Request, slug: str, which: str) -> Response:
        study = signed_in_study(request, slug)
        body = PhaseAnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _answer(request, study, lambda study: phase_questionnaire(
            study=study, rater=request.user, which=which, answers=body.validated_data["answers"],
            crowd=crowd_state(study, request.user)))


class InstructionsView(LoopView):
    @extend_schema(request=PhaseAnswersSerializer, responses=OpenApiTypes.OBJECT,
                   summary="Confirm the instructions (and answer their comprehension check)",
                   description="With a comprehension check, every answer must be the one the instructions lead "
                               "to; wrong ones come back under `errors` and the participant may try again.")
    def post(self, request: Request, slug: str) -> Response:
        study = signed_in_study(request, slug)
        body = PhaseAnswersSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _answer(request, study, lambda study: phase_instructions(study=study, rater=request.user,
                                                                       answers=body.validated_data["answers"]))


class TrainingRetryView(LoopView):
    @extend_schema(request=None, responses=OpenApiTypes.OBJECT, summary="Start the one training retry",
                   description="Only in state training_failed with retry_left true; otherwise 409.")
    def post(self, request: Request, slug: str) -> Response:
        study = signed_in_study(request, slug)
        return _answer(request, study, lambda study: training_retry(study=study, rater=request.user))
