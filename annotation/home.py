"""What the home page shows for each study: the user's role, status and, for raters, their own
progress and the next thing to do. Draft studies are not shown to raters at all."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.access import studies_for
from annotation.models import Study
from annotation.selectors import study_progress


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
    if study.status != Study.Status.OPEN:
        card.next_action = "Closed: no more ratings. Thank you." if study.status == Study.Status.CLOSED \
            else "Not open for rating at the moment."
    elif card.left:
        card.can_rate = True
        card.next_action = "Continue rating" if card.done else "Start rating"
    else:
        card.next_action = "All done for now."
    return card


def home_cards(user) -> list[StudyCard]:
    cards = []
    for study in studies_for(user):
        if study.role == "annotator":
            if study.status == Study.Status.DRAFT:
                continue
            cards.append(_rater_card(study, user))
        else:
            p = study_progress(study)
            cards.append(StudyCard(study=study, role=study.role, done=p.submitted, needed=p.slots, items=p.items,
                                   percent=round(p.percent)))
    return cards
