"""The items page (admins): search, filters, keyset pages, a blinded preview as a rater sees it,
and delete/replace of an item no rater has received yet."""

from __future__ import annotations

import random

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import get_study_for_manager
from annotation.items_list import FLAGGED, SEARCH_WINDOW, STATUSES, ItemFilters, items_page, study_systems
from annotation.models import Assignment, Item
from annotation.services.item_edits import ItemLocked, item_delete, item_replace
from annotation.views.workspace import allow_output_frames, build_screen

TEMPLATE = "annotation/study_items.html"


@login_required
@require_GET
def study_items(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    filters = ItemFilters.from_query(request.GET)
    page = items_page(study, filters) if not filters.errors else None
    context = {"study": study, "f": filters, "page": page, "statuses": STATUSES, "flagged_choices": FLAGGED,
               "systems": study_systems(study), "search_window": f"{SEARCH_WINDOW:,}"}
    if request.htmx and not request.htmx.boosted:
        return render(request, f"{TEMPLATE}#results", context)
    return render(request, TEMPLATE, context)


def _item(study, pk: int) -> Item:
    return get_object_or_404(Item, study=study, pk=pk)


@login_required
@require_GET
def item_preview(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The item exactly as a rater's screen shows it: blinded (no systems), responses shuffled when
    the study shuffles them, nothing submittable."""
    study = get_study_for_manager(request.user, slug)
    item = _item(study, pk)
    item.load_outputs()
    positions = [o.position for o in item.outputs.all()]
    if study.randomize_outputs:
        random.shuffle(positions)
    fake = Assignment(study=study, item=item, rater=request.user, permutation=positions)
    context = {"study": study, "state": "rate", "preview": True, "item": item,
               "progress": {"done": 0, "left": 0, "total": 0, "percent": 0},
               **build_screen(study, fake, draft={})}
    return allow_output_frames(render(request, "annotation/item_preview.html", context), study)


@login_required
@require_POST
def item_delete_view(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    try:
        external_id = item_delete(item=_item(study, pk))
    except ItemLocked as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Item {external_id} deleted.")
    return redirect("items-page", slug=slug)


@login_required
@require_http_methods(["GET", "POST"])
def item_replace_view(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    item = _item(study, pk)
    item.load_outputs()
    outputs = list(item.outputs.all())
    error = ""
    if request.method == "POST":
        context_text = request.POST.get("context", "")
        texts = {o.position: request.POST.get(f"output-{o.position}", "") for o in outputs}
        try:
            item_replace(item=item, context=context_text, outputs=texts)
        except (ItemLocked, ValueError) as exc:
            error = str(exc)
            item.context = context_text
            for o in outputs:
                o.content = texts[o.position]
        else:
            messages.success(request, f"Item {item.external_id} replaced.")
            return redirect("items-page", slug=slug)
    return render(request, "annotation/item_replace.html",
                  {"study": study, "item": item, "outputs": outputs, "error": error}, status=400 if error else 200)
