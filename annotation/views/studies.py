"""Home page and the admin's study pages: create, upload items, members, status, progress."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors
from annotation.access import get_study_for_admin, is_admin
from annotation.home import home_cards
from annotation.forms import ItemUploadForm, MembersForm, StudyCreateForm
from annotation.importers import ItemFileError
from annotation.services.items import items_import
from annotation.services.studies import StudyError, study_create, study_members_add, study_set_status
from rubrics.loader import RubricError, parse_rubric_text
from rubrics.services import rubric_version_create


def _admin_only(request: HttpRequest) -> HttpResponse | None:
    if not is_admin(request.user):
        return render(request, "annotation/forbidden.html", status=403)
    return None


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {"cards": home_cards(request.user), "is_admin": is_admin(request.user)}
    return render(request, "annotation/home.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def study_create_view(request: HttpRequest) -> HttpResponse:
    if (denied := _admin_only(request)) is not None:
        return denied
    form = StudyCreateForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            version = data["rubric_version"]
            if data.get("rubric_file"):
                upload = data["rubric_file"]
                rubric = parse_rubric_text(upload.read().decode("utf-8"), filename=upload.name)
                version, _ = rubric_version_create(data=rubric, user=request.user)
            study = study_create(
                name=data["name"], slug=data["slug"], rubric_version=version, user=request.user,
                instructions=data["instructions"], raters_per_item=data["raters_per_item"],
                presentation=data["presentation"], randomize_items=data["randomize_items"],
                randomize_outputs=data["randomize_outputs"], counterbalance=data["counterbalance"],
                attention_check_rate=data["attention_check_rate"],
            )
        except (RubricError, StudyError, UnicodeDecodeError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Study {study.name} created. Upload its items next.")
            return redirect("study-manage", slug=study.slug)
    return render(request, "annotation/study_create.html", {"form": form})


@login_required
def study_manage(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_admin(request.user, slug)
    context = {
        "study": study,
        "progress": selectors.study_progress(study),
        "raters": selectors.rater_progress(study),
        "items": selectors.item_progress(study, limit=50),
        "upload_form": ItemUploadForm(),
        "members_form": MembersForm(),
        "researchers": study.members.filter(role="researcher").select_related("user"),
    }
    if request.htmx and request.GET.get("fragment") == "progress":
        return render(request, "annotation/study_manage.html#progress", context)
    return render(request, "annotation/study_manage.html", context)


@login_required
@require_POST
def study_upload_items(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_admin(request.user, slug)
    form = ItemUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a file to upload.")
        return redirect("study-manage", slug=slug)
    upload = form.cleaned_data["file"]
    try:
        count = items_import(study=study, text=upload.read().decode("utf-8"), filename=upload.name)
    except ItemFileError as exc:
        messages.error(request, f"{upload.name} was refused; nothing was imported.\n{exc}")
    except UnicodeDecodeError:
        messages.error(request, f"{upload.name} is not UTF-8 text; nothing was imported.")
    else:
        messages.success(request, f"Imported {count} items from {upload.name}.")
    return redirect("study-manage", slug=slug)


@login_required
@require_POST
def study_add_members(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_admin(request.user, slug)
    form = MembersForm(request.POST)
    if form.is_valid():
        try:
            added = study_members_add(study=study, usernames=form.usernames_list(), role=form.cleaned_data["role"])
        except StudyError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Added {len(added)} {form.cleaned_data['role']}(s).")
    else:
        messages.error(request, "Give at least one username and a role.")
    return redirect("study-manage", slug=slug)


@login_required
@require_POST
def study_status(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_admin(request.user, slug)
    try:
        study_set_status(study=study, status=request.POST.get("status", ""))
    except StudyError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Study is now {study.get_status_display().lower()}.")
    return redirect("study-manage", slug=slug)
