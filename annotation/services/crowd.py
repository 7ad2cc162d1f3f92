"""Paid crowds: entry links that create or resume a rater from the ids a panel puts in the URL.

    crowd_link_create(study=..., user=..., provider="prolific", completion_code="C1A2B3", ...) -> CrowdLink
    crowd_enter(token=..., params=request.GET) -> CrowdParticipant     # creates or resumes the rater
    crowd_return(participant=...)                                      # gives their work back at once
    crowd_state(study, user) -> CrowdState | None                      # quota, time left, completion

Each panel fills in the study URL by its own documented rule (crowd_study_url gives what to hand it):
Prolific replaces the literal `{{%PROLIFIC_PID%}}`, `{{%STUDY_ID%}}` and `{{%SESSION_ID%}}` in the URL;
MTurk's ExternalQuestion appends assignmentId, hitId, turkSubmitTo and workerId to a URL without them
(assignmentId ASSIGNMENT_ID_NOT_AVAILABLE while a worker previews the HIT) and takes the result back
as a form posted to `<turkSubmitTo>/mturk/externalSubmit` with the assignmentId; any other panel gets
`participant` and `session`, whose PARTICIPANT_ID and SESSION_ID the researcher replaces by the
panel's own placeholders. The rater account is `<provider>-<participant id>`,
with no password: the link and the participant id are the credentials, and the link is
unguessable, expires and can be revoked. Since ids travel in URLs (browser histories, screenshots,
the panel's pages), a participant is also held by the browser that started: its cookie's key (a hash
of it is kept) and its session. Another browser with the same ids is refused while the holder was
active in the last CROWD_BROWSER_IDLE_MINUTES (`CrowdInUse`), and takes over after that, signing the
holder out; the panel's session id (Prolific's SESSION_ID) must be the one the participant started with.
A panel id is a rater of one study: the same id through another study's link is a new account
(`<provider>-<participant id>.<study id>` when the plain name is taken), unless both links were made
with `shared_identity` by a site admin. A participant who returns the task, or runs past the time limit,
gives their open assignments back to the pool at once, not after the lease expiry
(assignments_release_overdue, which the assignment engine's sweep calls).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.base import SessionBase
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation.access import is_admin
from annotation.db import instance_from_row, prepared_cursor, select_columns
from annotation.models import Assignment, CrowdLink, CrowdParticipant, Item, Study, StudyChange, StudyMember
from annotation.services.assignments import assignments_release, lease_duration

PARAMS = {  # provider -> (participant, session) query parameters
    CrowdLink.Provider.PROLIFIC: ("PROLIFIC_PID", "SESSION_ID"),
    CrowdLink.Provider.MTURK: ("workerId", "assignmentId"),
    CrowdLink.Provider.GENERIC: ("participant", "session"),
}
PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete"
# The query of the study URL each panel is given; the values are what the panel replaces (kept literal:
# Prolific matches the text `{{%PROLIFIC_PID%}}`, not its percent-encoding). MTurk appends its own.
STUDY_URL_QUERY = {
    CrowdLink.Provider.PROLIFIC: "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
    CrowdLink.Provider.MTURK: "",
    CrowdLink.Provider.GENERIC: "participant=PARTICIPANT_ID&session=SESSION_ID",
}
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")  # turkSubmitTo: production, sandbox
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_DAYS = 90


class CrowdError(ValueError):
    """`field` names what was wrong ('' when it is the link itself)."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}" if field else message)


class CrowdInUse(CrowdError):
    """Another browser holds this participant and was active `minutes_left` minutes ago or less."""

    def __init__(self, minutes_left: int):
        self.minutes_left = minutes_left
        super().__init__("", _("This participant id is in use in another browser. Continue there, or come back "
                               "here once it has been left idle for %(minutes)d minutes.") % {"minutes": minutes_left})


def browser_key_new() -> str:
    """The key a browser keeps in its crowd cookie (views.crowd); only its hash is stored."""
    return secrets.token_urlsafe(32)


def _key_hash(browser_key: str) -> str:
    return hashlib.sha256(browser_key.encode()).hexdigest()


def crowd_link_create(*, study: Study, user, provider: str, completion_code: str = "", completion_url: str = "",
                      time_limit_minutes: int | None = None, items_per_participant: int | None = None,
                      days: int = 30, shared_identity: bool = False) -> CrowdLink:
    if provider not in PARAMS:
        raise CrowdError("provider", f"one of {', '.join(PARAMS)}")
    if not 1 <= days <= MAX_DAYS:
        raise CrowdError("days", f"between 1 and {MAX_DAYS} days")
    if completion_code and not ID_RE.match(completion_code):
        raise CrowdError("completion_code", "letters, digits, - and _ only, at most 64")
    if provider == CrowdLink.Provider.PROLIFIC and not completion_code:
        raise CrowdError("completion_code", "Prolific needs the study's completion code")
    if completion_url and not completion_url.startswith("https://"):
        raise CrowdError("completion_url", "an https:// address")
    if shared_identity and not is_admin(user):
        raise CrowdError("shared_identity", "only a site administrator may link a panel id across studies")
    for name, value in (("time_limit_minutes", time_limit_minutes), ("items_per_participant", items_per_participant)):
        if value is not None and value < 1:
            raise CrowdError(name, "at least 1, or empty for no limit")
    link = CrowdLink.objects.create(
        study=study, token=secrets.token_urlsafe(32), provider=provider, completion_code=completion_code,
        completion_url=completion_url, time_limit_minutes=time_limit_minutes,
        items_per_participant=items_per_participant, expires_at=timezone.now() + timedelta(days=days),
        created_by=user, shared_identity=shared_identity)
    StudyChange.objects.create(study=study, user=user, field="crowd link", old="",
                               new=f"{link.get_provider_display()} link created, expires {link.expires_at:%Y-%m-%d}"
                                   + (", panel ids shared with other studies' shared links" if shared_identity else ""))
    return link


def crowd_link_revoke(*, link: CrowdLink, user=None) -> CrowdLink:
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
        StudyChange.objects.create(study=link.study, user=user, field="crowd link", old="active", new="revoked")
    return link


def crowd_study_url(link: CrowdLink, entry_url: str) -> str:
    """The study URL to give the panel: the link's absolute entry address and the panel's placeholders."""
    query = STUDY_URL_QUERY[link.provider]
    return f"{entry_url}?{query}" if query else entry_url


def crowd_is_preview(*, token: str, params) -> bool:
    """An MTurk worker previewing the HIT (not accepted yet): nothing may be created. CrowdError as
    crowd_enter for a link that cannot be used."""
    link = _active_link(token)
    return link.provider == CrowdLink.Provider.MTURK and params.get("assignmentId") == MTURK_PREVIEW


def mturk_submit_url(turk_submit_to: str) -> str:
    """Where an MTurk worker's finished assignment is posted; '' for a turkSubmitTo that is not MTurk's."""
    host = (turk_submit_to or "").strip().rstrip("/")
    return f"{host}/mturk/externalSubmit" if host in MTURK_HOSTS else ""


def _active_link(token: str) -> CrowdLink:
    link = CrowdLink.objects.select_related("study").filter(token=token).first()
    if link is None:
        raise CrowdError("", _("This link is not valid."))
    if link.revoked_at is not None:
        raise CrowdError("", _("This link was withdrawn by the researchers."))
    if link.expires_at <= timezone.now():
        raise CrowdError("", _("This link has expired."))
    if link.study.status != Study.Status.OPEN:
        raise CrowdError("", _("This study is not open at the moment."))
    return link


def _panel_id(link: CrowdLink, params) -> str:
    pid_param = PARAMS[link.provider][0]
    pid = (params.get(pid_param) or "").strip()
    if not ID_RE.match(pid):
        raise CrowdError(pid_param, _("missing or not a participant id (letters, digits, - and _)"))
    return pid


def crowd_enter(*, token: str, params, browser_key: str | None = None, session_key: str = "") -> CrowdParticipant:
    """The participant of these URL parameters, created on the first visit, resumed on the next.

    `browser_key` is the entering browser's (None: a caller inside Concord, e.g. the demo, that holds no
    browser); `session_key` its current session, if any. A browser that does not hold the participant
    takes it over only after the holder's idle time (else CrowdInUse); the session id must match."""
    link = _active_link(token)
    pid = _panel_id(link, params)
    session_param = PARAMS[link.provider][1]
    session_id = (params.get(session_param) or "").strip()[:64]
    existing = CrowdParticipant.objects.select_related("user").filter(link=link, participant_id=pid).first()
    if existing is not None:
        return _resume(existing, session_param, session_id, browser_key, session_key)
    deadline = timezone.now() + timedelta(minutes=link.time_limit_minutes) if link.time_limit_minutes else None
    try:
        with transaction.atomic():
            user = _rater_account(link, pid)
            StudyMember.objects.get_or_create(study=link.study, user=user,
                                              defaults={"role": StudyMember.Role.ANNOTATOR})
            return CrowdParticipant.objects.create(
                link=link, user=user, participant_id=pid, session_id=session_id, deadline=deadline,
                browser_key_hash=_key_hash(browser_key) if browser_key else "", seen_at=timezone.now())
    except IntegrityError:  # the same participant's second tab, at the same moment
        existing = CrowdParticipant.objects.select_related("user").get(link=link, participant_id=pid)
        return _resume(existing, session_param, session_id, browser_key, session_key)


def _resume(participant: CrowdParticipant, session_param: str, session_id: str, browser_key: str | None,
            session_key: str) -> CrowdParticipant:
    if participant.returned_at is not None:
        raise CrowdError("", _("You returned this task; it cannot be taken up again."))
    if participant.deadline is not None and participant.deadline <= timezone.now():
        raise CrowdError("", _("Your time for this task is up."))
    if participant.session_id and not secrets.compare_digest(participant.session_id, session_id):
        raise CrowdError(session_param, _("this is not the panel session this task was started in; "
                                          "open the study from your panel's page again"))
    if browser_key is None:
        return participant
    holds = (participant.browser_key_hash and secrets.compare_digest(participant.browser_key_hash,
                                                                     _key_hash(browser_key))) or \
        (session_key and participant.session_key == session_key)
    if not holds:
        idle = timedelta(minutes=settings.CROWD_BROWSER_IDLE_MINUTES)
        last = _last_active(participant)
        if last is not None and last > timezone.now() - idle:
            raise CrowdInUse(max(1, -(-int((last + idle - timezone.now()).total_seconds()) // 60)))
    participant.browser_key_hash = _key_hash(browser_key)
    participant.seen_at = timezone.now()
    participant.save(update_fields=["browser_key_hash", "seen_at"])
    return participant


def _last_active(participant: CrowdParticipant) -> datetime | None:
    """When the holding browser last did something: its entry, a submit, or taking or saving an item (each
    sets the item's lease from that moment). Asked only when another browser comes, never in the loop."""
    study = participant.link.study
    work = Assignment.objects.filter(study=study, rater_id=participant.user_id).aggregate(
        submitted=Max("submitted_at"), lease_end=Max("expires_at", filter=Q(status=Assignment.Status.ACTIVE)))
    times = [participant.seen_at, work["submitted"],
             work["lease_end"] - lease_duration(study) if work["lease_end"] else None]
    return max((t for t in times if t is not None), default=None)


def crowd_hold(*, participant: CrowdParticipant, session: SessionBase) -> None:
    """After the sign-in: this session holds the participant; a session that held it before (the browser
    taken over from) is ended, so that two browsers never rate as one participant."""
    previous = participant.session_key
    if previous and previous != session.session_key:
        type(session)(session_key=previous).delete()
    if previous != session.session_key:
        participant.session_key = session.session_key or ""
        participant.save(update_fields=["session_key"])


def crowd_entry_check(*, token: str, params, user) -> bool:
    """What crowd_enter would refuse (CrowdError), and whether `user` already is the participant
    these URL parameters name (their own reload needs no confirmation). Reads only."""
    link = _active_link(token)
    pid = _panel_id(link, params)
    return CrowdParticipant.objects.filter(link=link, participant_id=pid, user_id=user.pk).exists()


def _rater_account(link: CrowdLink, pid: str):
    """The rater this panel id already is in the link's study (through any of its links), or, where
    the link shares identities, in any study whose link shares them; else a new account without a
    password. Never an account found by its name: a panel id met in another study is someone this
    study has not seen (the panel's ids say nothing about who a person is elsewhere)."""
    scope = Q(link__study_id=link.study_id)
    if link.shared_identity:
        scope |= Q(link__shared_identity=True)
    known = (CrowdParticipant.objects.filter(scope, link__provider=link.provider, participant_id=pid)
             .select_related("user").order_by("started_at").first())
    if known is not None:
        return known.user
    User = get_user_model()
    base = f"{link.provider}-{pid}"[:120]
    username = base
    if User.objects.filter(username=base).exists():  # the panel id's account of another study
        username = f"{base}.{link.study_id}"
        while User.objects.filter(username=username).exists():
            username = f"{base}.{link.study_id}-{secrets.token_hex(3)}"
    user = User(username=username)
    user.set_unusable_password()  # the link and the participant id are the credentials
    user.save()
    return user


def crowd_username_after_purge(username: str, *, provider: str, old_id: str, new_id: str) -> str | None:
    """The account's new name once its panel id is replaced (`prolific-5f1a.12` -> `prolific-purged-ab.12`),
    or None when the name does not carry that panel id (an account that was not made by a link)."""
    old = f"{provider}-{old_id}"[:120]
    if username == old or username.startswith(old + "."):
        return f"{provider}-{new_id}" + username[len(old):]
    return None


def crowd_return(*, participant: CrowdParticipant) -> int:
    """The participant gives the task back: their open assignments go back to the pool now."""
    if participant.returned_at is None:
        participant.returned_at = timezone.now()
        participant.save(update_fields=["returned_at"])
    return assignments_release(study=participant.link.study, rater=participant.user)


@dataclass
class CrowdState:
    participant: CrowdParticipant
    rated: int
    quota_reached: bool
    time_up: bool
    seconds_left: int | None

    @property
    def completion_url(self) -> str:
        link = self.participant.link
        if link.completion_url:
            return link.completion_url
        if link.provider == CrowdLink.Provider.PROLIFIC and link.completion_code:
            return f"{PROLIFIC_COMPLETE}?{urlencode({'cc': link.completion_code})}"
        return ""


_CROWD_STATE_SQL = f"""
    SELECT {select_columns(CrowdParticipant, "p")}, {select_columns(CrowdLink, "l")},
        (SELECT count(*) FROM {Assignment._meta.db_table} a JOIN {Item._meta.db_table} i ON i.id = a.item_id
         WHERE a.study_id = l.study_id AND a.rater_id = p.user_id AND a.status = %s AND NOT i.is_training)
    FROM {CrowdParticipant._meta.db_table} p JOIN {CrowdLink._meta.db_table} l ON l.id = p.link_id
    WHERE l.study_id = %s AND p.user_id = %s
    ORDER BY p.started_at DESC LIMIT 1
"""


def crowd_state(study: Study, user) -> CrowdState | None:
    """None for a rater who did not come through a crowd link of this study. Asked on every request of
    the rating loop: one prepared statement (participant, link and items rated), no ORM compiling, and
    none where the study, as get_study_for_annotator read it, has no crowd links."""
    if getattr(study, "has_crowd_links", True) is False:
        return None
    with prepared_cursor() as cursor:
        cursor.execute(_CROWD_STATE_SQL, [Assignment.Status.SUBMITTED, study.pk, user.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(CrowdParticipant._meta.concrete_fields)
    participant = instance_from_row(CrowdParticipant, row[:n])
    participant.link = instance_from_row(CrowdLink, row[n:-1])
    rated = row[-1]  # training is not the quota
    quota = participant.link.items_per_participant
    now = timezone.now()
    left = int((participant.deadline - now).total_seconds()) if participant.deadline else None
    return CrowdState(participant=participant, rated=rated, quota_reached=bool(quota and rated >= quota),
                      time_up=left is not None and left <= 0, seconds_left=max(left, 0) if left is not None else None)


def crowd_finish(state: CrowdState) -> None:
    if state.participant.finished_at is None:
        state.participant.finished_at = timezone.now()
        state.participant.save(update_fields=["finished_at"])
    assignments_release(study=state.participant.link.study, rater=state.participant.user)
