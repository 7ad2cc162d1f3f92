"""peer_import: a peer's file into a study, all or nothing.

Everything is read and checked first (the mapping, the file, each answer against the rubric with the
workspace's own answers_check), so a bad file is refused whole with every problem named by task/file
and control before anything is written. Then, in one transaction: the new items through items_import,
one account per peer annotator (no usable password; added as an annotator), and per annotation an
assignment submitted through assignment_submit, so the ratings are stored exactly as a rater's are.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max

from annotation.importers import ItemFileError
from annotation.models import Assignment, Study, StudyMember
from annotation.peers.mapping import Mapping, mapping_parse
from annotation.peers.readers import PeerAnnotation, PeerData, PeerFileError, PeerItem, read_peer
from annotation.services.assignments import recount_study
from annotation.services.items import items_import
from annotation.services.ratings import AnswerError, answers_check, answers_normalise, assignment_submit, field_name
from annotation.services.studies import study_create, study_members_add, study_set_status

USERNAME_PREFIX = {"label-studio": "ls.", "potato": "potato."}
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")


@dataclass
class PeerImportResult:
    items_created: int = 0
    items_existing: int = 0
    outputs_created: int = 0
    annotations: int = 0
    skipped: int = 0
    raters: int = 0
    ratings: Counter = field(default_factory=Counter)  # criterion key -> rating rows stored


def peer_username(source: str, annotator: str) -> str:
    return (USERNAME_PREFIX[source] + _NOT_IN_USERNAME.sub("_", annotator))[:150]


def _answers(annotation: PeerAnnotation) -> dict:
    responses: dict[str, dict] = {}
    item: dict = {}
    for (key, response), (value, _control) in annotation.answers.items():
        block = item if response is None else responses.setdefault(str(response), {})
        block[key] = {"value": value, "reasoning": ""}
    return {"responses": responses, "item": item}


def _check_answers(rubric: dict, data: PeerData, contents: dict[str, tuple[str, list[str]]], controls: dict,
                   done: set[tuple[str, str]]) -> list:
    """Every annotation checked as a submit would be; problems as (where, control, message). `done`:
    the (item id, annotator) pairs the study holds already."""
    errors = []
    seen: dict[tuple[str, str], str] = {}
    for a in data.annotations:
        if (a.item_id, a.annotator) in done:
            errors.append((a.where, "annotator", f"{a.annotator} annotated this item already (in the study)"))
            continue
        if (a.item_id, a.annotator) in seen:
            errors.append((a.where, "annotator", f"{a.annotator} annotated this item already ({seen[a.item_id, a.annotator]})"))
            continue
        seen[a.item_id, a.annotator] = a.where
        context, outputs = contents[a.item_id]
        try:
            answers_check(rubric, answers_normalise(_answers(a)), outputs, context)
        except AnswerError as exc:
            for name, message in exc.errors.items():
                errors.append((a.where, controls.get(name.removesuffix("__reasoning"), name), message))
    return errors


def _contents(study: Study, items: list[PeerItem], errors: list) -> tuple[dict, list[PeerItem]]:
    """item id -> (context, output texts) for every item of the file, and the items the study lacks."""
    existing = {i.external_id: i for i in study.items.prefetch_related("outputs").filter(
        external_id__in=[p.external_id for p in items])}
    contents, new, seen = {}, [], set()
    for p in items:
        if p.external_id in seen:
            errors.append((p.where, "id", f"item id {p.external_id!r} appears twice in the file"))
            continue
        seen.add(p.external_id)
        if p.external_id in existing:
            outputs = [o.content for o in sorted(existing[p.external_id].outputs.all(), key=lambda o: o.position)]
            if len(outputs) != len(p.outputs):
                errors.append((p.where, "outputs", f"the study's item {p.external_id!r} has {len(outputs)} outputs, "
                                                   f"the file {len(p.outputs)}"))
            contents[p.external_id] = (existing[p.external_id].context, outputs)
        else:
            contents[p.external_id] = (p.context, p.outputs)
            new.append(p)
    return contents, new


def _imported_before(study: Study, source: str, data: PeerData) -> set[tuple[str, str]]:
    by_username = {peer_username(source, a.annotator): a.annotator for a in data.annotations}
    return {(item_id, by_username[username]) for item_id, username in Assignment.objects.filter(
        study=study, rater__username__in=list(by_username)).values_list("item__external_id", "rater__username")}


def _items_jsonl(items: list[PeerItem], output_fields: tuple[str, ...]) -> str:
    return "".join(json.dumps({"id": p.external_id, "context": p.context,
                               "outputs": [{"system": name, "content": text} for name, text in zip(output_fields, p.outputs)]})
                   + "\n" for p in items)


@dataclass
class _Plan:
    """A peer's file read and checked against a study, nothing written yet."""

    mapping: Mapping
    data: PeerData
    contents: dict
    new_items: list[PeerItem]


def _plan(study: Study, source: str, path: Path, mapping_text: str, *, open_first: bool = True) -> _Plan:
    """Read and check everything; raises MappingError or PeerFileError (every problem, by task/file and
    control). `open_first`: refuse a study that is not open (its ratings are stored as submits)."""
    rubric = study.rubric_version.definition
    mapping = mapping_parse(mapping_text, rubric=rubric)
    data = read_peer(source, path, mapping)
    if open_first and study.status != Study.Status.OPEN:
        raise PeerFileError([(f"study {study.slug}", "status", "open the study first: ratings are stored as "
                                                                "submits, which a study takes only while open")])
    errors: list[tuple[str, str, str]] = []
    contents, new_items = _contents(study, data.items, errors)
    controls = {field_name(response, key): control for control, (key, response) in mapping.controls.items()}
    errors += _check_answers(rubric, data, contents, controls, _imported_before(study, source, data))
    if errors:
        raise PeerFileError(errors)
    return _Plan(mapping, data, contents, new_items)


def _write_items(study: Study, plan: _Plan) -> PeerImportResult:
    result = PeerImportResult(items_existing=len(plan.data.items) - len(plan.new_items), skipped=plan.data.skipped)
    if plan.new_items:
        try:
            result.items_created = items_import(study=study, text=_items_jsonl(plan.new_items, plan.mapping.outputs),
                                                filename="peer.jsonl")
        except ItemFileError as exc:  # its lines are the new items' places in order
            raise PeerFileError([(plan.new_items[line - 1].where if 0 < line <= len(plan.new_items) else "items",
                                  fld, msg) for line, fld, msg in exc.errors]) from None
        result.outputs_created = sum(len(p.outputs) for p in plan.new_items)
    return result


def _write_ratings(study: Study, source: str, plan: _Plan, result: PeerImportResult, user) -> None:
    raters = _raters(study, source, {a.annotator for a in plan.data.annotations}, user)
    result.raters = len(raters)
    items = {i.external_id: i for i in study.items.filter(external_id__in=list(plan.contents))}
    slots = Counter({row["item_id"]: row["top"] + 1 for row in Assignment.objects.filter(
        item__in=items.values(), slot__isnull=False).values("item_id").annotate(top=Max("slot"))})
    for a in plan.data.annotations:
        result.ratings.update(_store(study, items[a.item_id], raters[a.annotator], a, slots))
        result.annotations += 1
    recount_study(study)


def peer_import(*, study: Study, source: str, path: Path, mapping_text: str, user=None) -> PeerImportResult:
    """Import a peer's items and annotations into the open `study`. Raises MappingError or PeerFileError
    (every problem, by task/file and control) before anything is written."""
    plan = _plan(study, source, path, mapping_text)
    with transaction.atomic():
        result = _write_items(study, plan)
        _write_ratings(study, source, plan, result, user)
    return result


def peer_import_new_study(*, name: str, rubric_version, source: str, path: Path, mapping_text: str, user=None,
                          open_study: bool = False, slug: str = "") -> tuple[Study, PeerImportResult]:
    """A new study on `rubric_version`, filled from a peer's file: its items, then its annotations as
    ratings. All or nothing: a refused file (MappingError, PeerFileError) or name (StudyError) leaves no
    study behind. The study is opened to take the ratings (they are stored as submits, as a rater's are);
    `open_study` leaves it open, else it is paused again so that no rater gets an item before an admin
    resumes it; a file without annotations leaves a draft unless `open_study`."""
    with transaction.atomic():
        study = study_create(name=name, slug=slug, rubric_version=rubric_version, user=user)
        plan = _plan(study, source, path, mapping_text, open_first=False)
        if not plan.new_items:
            raise PeerFileError([(path.name, "items", "the file holds no items, and a new study needs some")])
        result = _write_items(study, plan)
        if open_study or plan.data.annotations:
            study_set_status(study=study, status=Study.Status.OPEN, user=user)
        if plan.data.annotations:
            _write_ratings(study, source, plan, result, user)
            if not open_study:
                study_set_status(study=study, status=Study.Status.PAUSED, user=user)
    return study, result


def _raters(study: Study, source: str, annotators: set[str], user) -> dict:
    """annotator -> the account their ratings are stored under, made on first import (no usable password)."""
    User = get_user_model()
    accounts = {}
    for annotator in sorted(annotators):
        account, created = User.objects.get_or_create(username=peer_username(source, annotator))
        if created:
            account.set_unusable_password()
            account.save(update_fields=["password"])
        accounts[annotator] = account
    members = set(StudyMember.objects.filter(study=study, user__in=accounts.values()).values_list("user_id", flat=True))
    newcomers = [a.username for a in accounts.values() if a.pk not in members]
    if newcomers:
        study_members_add(study=study, usernames=newcomers, role=StudyMember.Role.ANNOTATOR, user=user)
    return accounts


def _store(study: Study, item, rater, annotation: PeerAnnotation, slots: Counter) -> Counter:
    """One annotation as a submitted assignment with the outputs in file order; its ratings per criterion."""
    n_outputs = item.outputs.count()
    assignment = Assignment.objects.create(study=study, item=item, rater=rater, permutation=list(range(n_outputs)),
                                           slot=slots[item.pk])
    slots[item.pk] += 1
    assignment.study, assignment.item = study, item
    assignment_submit(assignment=assignment, answers=_answers(annotation), time_on_task_ms=0)
    return Counter(assignment.ratings.values_list("criterion", flat=True))
