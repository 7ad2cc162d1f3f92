"""What the home page shows for each study: the user's role, status and, for raters, their own
progress and the next thing to do. Draft studies are not shown to raters at all."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from annotation.access import studies_for
from annotation.models import Assignment, Item, Study, StudyMember
from annotation.services.sampling_policy import wanted_expression


def _count(qs) -> Coalesce:
    """A per-study COUNT as a subquery, so every card's numbers come from one statement."""
    return Coalesce(Subquery(qs.order_by().values("study").annotate(n=Count("id")).values("n"),
                             output_field=IntegerField()), Value(0))


@dataclass
class StudyCard:
    study: Study
    role: str
    done: int = 0
    left: int = 0
    percent: int = 0
    needed: int = 0  # readers' cards: ratings the study needs in all
    items: int = 0
    can_rate: bool = False  # the rater has work and the study is open
    next_action: str = ""


def _rater_card(study: Study, user) -> StudyCard:
    from annotation.views.workspace import rater_progress  # the workspace's own count, so both agree

    p = rater_progress(study, user)
    card = StudyCard(study=study, role="annotator", done=p["done"], left=p["left"], percent=p["percent"])
    if StudyMember.objects.filter(study=study, user=user, paused=True).exists():
        card.next_action = _("Your work here is paused by an administrator.")
    elif study.status != Study.Status.OPEN:
        card.next_action = _("Closed: no more ratings. Thank you.") if study.status == Study.Status.CLOSED \
            else _("Not open for rating at the moment.")
    elif card.left:
        card.can_rate = True
        card.next_action = _("Continue rating") if card.done else _("Start rating")
    else:
        card.next_action = _("All done for now.")
    return card


def _needed(study: Study) -> int:
    """Ratings the study needs in all: under a sampling policy, what each item wants now."""
    if not study.sampling_policy:
        return study.n_items * study.raters_per_item
    items = Item.objects.filter(study=study, is_attention_check=False)
    return items.aggregate(n=Sum(wanted_expression(study)))["n"] or 0


def home_cards(user) -> list[StudyCard]:
    cards = []
    studies = studies_for(user).annotate(
        n_items=_count(Item.objects.filter(study=OuterRef("pk"), is_attention_check=False)),
        n_submitted=_count(Assignment.objects.filter(study=OuterRef("pk"), is_attention_check=False,
                                                     status=Assignment.Status.SUBMITTED)),
    )
    for study in studies:
        if study.role == "annotator":
            if study.status == Study.Status.DRAFT:
                continue
            cards.append(_rater_card(study, user))
        else:
            needed = _needed(study)
            cards.append(StudyCard(study=study, role=study.role, done=study.n_submitted, needed=needed,
                                   items=study.n_items,
                                   percent=round(100 * study.n_submitted / needed) if needed else 0))
    return cards
