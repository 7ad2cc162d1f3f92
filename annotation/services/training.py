"""The training phase: before rating, a rater answers the study's training items (items uploaded with
"training": true, gold answers and an explanation) and, after each, sees what was expected and why.
A share of right answers at or above the study's pass mark qualifies them; one retry.

    training_state(study, rater) -> TrainingState          # required? qualified? where they are
    training_next(study=..., rater=...) -> Assignment | None   # the next training item to answer
    training_record(assignment=...)                        # after a training item is submitted
    training_retry(study=..., rater=...) -> TrainingAttempt    # the one retry after a failed attempt
                                                               # (keeps the first attempt's time on task)

A training item is flagged as an attention check, so it stays out of every statistic and export; its
answer is graded by the same gold check (annotation.services.ratings.attention_passed). It is never
counted as an attention check for payment: failing training screens out (annotation.payments).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.models import Assignment, Item, Study, TrainingAttempt
from annotation.services import comparative

MAX_ATTEMPTS = 2  # the first try and one retry


class TrainingError(ValueError):
    pass


@dataclass(frozen=True)
class TrainingState:
    required: bool
    attempt: TrainingAttempt | None
    n_items: int

    @property
    def qualified(self) -> bool:
        return not self.required or bool(self.attempt and self.attempt.passed)

    @property
    def in_progress(self) -> bool:
        return self.required and (self.attempt is None or self.attempt.passed is None)

    @property
    def can_retry(self) -> bool:
        return bool(self.attempt and self.attempt.passed is False and self.attempt.number < MAX_ATTEMPTS)

    @property
    def failed_out(self) -> bool:
        return bool(self.attempt and self.attempt.passed is False and self.attempt.number >= MAX_ATTEMPTS)


def _items(study: Study):
    return Item.objects.filter(study=study, is_training=True).order_by("id")


def training_state(study: Study, rater) -> TrainingState:
    if study.training_pass_mark is None:
        return TrainingState(False, None, 0)
    n = _items(study).count()
    if n == 0:
        return TrainingState(False, None, 0)  # a pass mark but no training items: nothing to train on
    attempt = TrainingAttempt.objects.filter(study=study, rater=rater).order_by("-number").first()
    return TrainingState(True, attempt, n)


def training_next(*, study: Study, rater) -> Assignment | None:
    """The rater's open training assignment, else the next training item of the current attempt
    (started on first call); None when the attempt is complete."""
    with transaction.atomic():
        attempt = TrainingAttempt.objects.select_for_update().filter(study=study, rater=rater).order_by("-number").first()
        if attempt is None:
            attempt = TrainingAttempt.objects.create(study=study, rater=rater, number=1, n_items=_items(study).count())
        if attempt.passed is not None:
            return None
        active = Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.ACTIVE,
                                           item__is_training=True).first()
        if active is not None:
            return Assignment.objects.with_item(id=active.pk)
        done = Assignment.objects.filter(study=study, rater=rater, item__is_training=True).values("item_id")
        item = _items(study).exclude(id__in=done).prefetch_related("outputs").first()
        if item is None:
            return None
        # Uploaded order, so an explanation may say "Response 1"; a pairwise or best-worst rubric
        # shows its first 2 or tuple_size outputs, as its design shows that many.
        _, shown = comparative.shown_design(study.rubric)
        positions = sorted(o.position for o in item.outputs.all())[:shown or None]
        assignment = Assignment.objects.create(
            study=study, item=item, rater=rater, status=Assignment.Status.ACTIVE, slot=None,
            permutation=positions, is_attention_check=True)
        return Assignment.objects.with_item(id=assignment.pk)


def training_record(*, assignment: Assignment) -> TrainingAttempt | None:
    """Count a submitted training answer into the rater's attempt; close the attempt after the last."""
    if not assignment.item.is_training:
        return None
    study = assignment.study
    with transaction.atomic():
        attempt = (TrainingAttempt.objects.select_for_update().filter(study=study, rater=assignment.rater)
                   .order_by("-number").first())
        if attempt is None or attempt.passed is not None or assignment.item.external_id in attempt.answers:
            return attempt
        right = assignment.attention_passed is True
        attempt.answers = {**attempt.answers, assignment.item.external_id: right}
        attempt.n_answered = len(attempt.answers)
        attempt.n_correct = sum(attempt.answers.values())
        if attempt.n_answered >= attempt.n_items:
            attempt.passed = attempt.n_correct >= study.training_pass_mark * attempt.n_items - 1e-9
            attempt.finished_at = timezone.now()
        attempt.save()
        return attempt


def training_retry(*, study: Study, rater) -> TrainingAttempt:
    """Start the one retry: the first attempt's result stays stored; its answers make way for new ones."""
    with transaction.atomic():
        last = TrainingAttempt.objects.select_for_update().filter(study=study, rater=rater).order_by("-number").first()
        if last is None or last.passed is not False:
            raise TrainingError(_("there is no failed training attempt to retry"))
        if last.number >= MAX_ATTEMPTS:
            raise TrainingError(_("the training allows one retry, and it has been used"))
        # One assignment per (item, rater): the earlier answers go, their result is in `last`, and so is
        # their time on task, which is paid time all the same (the payment sheet adds it).
        answers = Assignment.objects.filter(study=study, rater=rater, item__is_training=True)
        last.time_on_task_ms += answers.aggregate(ms=Sum("time_on_task_ms"))["ms"] or 0
        last.save(update_fields=["time_on_task_ms"])
        answers.delete()
        return TrainingAttempt.objects.create(study=study, rater=rater, number=last.number + 1,
                                              n_items=_items(study).count())
