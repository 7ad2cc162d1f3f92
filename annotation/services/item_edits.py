"""Delete or replace one item, allowed only while no rater has touched it (no assignment at all):
once someone has rated or opened it, changing it would silently change what they judged."""

from __future__ import annotations

from django.db import transaction

from annotation import trajectory
from annotation.items_list import forget_study_systems
from annotation.models import Assignment, Item, Output


class ItemLocked(ValueError):
    """The item has assignments; the message says why it cannot change."""


def _lock(item: Item) -> Item:
    item = Item.objects.select_for_update().get(pk=item.pk)
    submitted = Assignment.objects.filter(item=item, status=Assignment.Status.SUBMITTED).count()
    if submitted:
        raise ItemLocked(f"Item {item.external_id} already has {submitted} rating(s); it can no longer be "
                         "changed or deleted.")
    if Assignment.objects.filter(item=item).exists():
        raise ItemLocked(f"Item {item.external_id} has been given to a rater; it can no longer be changed or "
                         "deleted.")
    return item


@transaction.atomic
def item_delete(*, item: Item) -> str:
    item = _lock(item)
    external_id = item.external_id
    study = item.study
    item.delete()
    transaction.on_commit(lambda: forget_study_systems(study))  # its outputs may have been a system's last
    return external_id


@transaction.atomic
def item_replace(*, item: Item, context: str, outputs: dict[int, str]) -> Item:
    """New context and output texts (by output position); systems and ids stay."""
    item = _lock(item)  # first: a locked item is refused whatever the new text
    if not context.strip() and item.context.strip():
        raise ValueError("context: give the new context text (it may not be emptied).")
    empty = sorted(pos + 1 for pos, text in outputs.items() if not text.strip())
    if empty:
        raise ValueError(f"output {empty[0]}: the response text may not be empty.")
    if item.context_kind == Item.ContextKind.TRAJECTORY and context.strip():
        context = _trajectory(context, "context")
    changed = list(Output.objects.filter(item=item, position__in=list(outputs)))
    texts = {o.position: _trajectory(outputs[o.position], f"output {o.position + 1}")
             if o.kind == Output.Kind.TRAJECTORY else outputs[o.position] for o in changed}  # all checked first
    item.context = context
    item.save(update_fields=["context"])
    for output in changed:
        output.content = texts[output.position]
        output.save(update_fields=["content"])
    return item


def _trajectory(text: str, where: str) -> str:
    """A replacement trajectory, checked as an import checks it (docs/item-format.md)."""
    try:
        return trajectory.normalise(text)
    except trajectory.TrajectoryError as exc:
        raise ValueError(f"{where}: {exc}") from None
