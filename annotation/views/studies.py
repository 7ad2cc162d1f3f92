"""Home page and study creation. Managing a study: annotation/views/manage.py."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import is_admin
from annotation.demo_progress import demo_progress
from annotation.home import home_cards
from annotation.forms import StudyCreateForm
from annotation.services.studies import StudyError, study_create
from rubrics.loader import RubricError, parse_rubric_text
from rubrics.services import rubric_version_create


def _admin_only(request: HttpRequest) -> HttpResponse | None:
    if not is_admin(request.user):
        return render(request, "annotation/forbidden.html", status=403)
    return None


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {"cards": home_cards(request.user), "is_admin": is_admin(request.user), "demo": demo_progress()}
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
        except StudyError as exc:  # "field: message": shown beside the field it names
            field, _, message = str(exc).partition(": ")
            form.add_error(field if field in form.fields else None, message if field in form.fields else str(exc))
        except (RubricError, UnicodeDecodeError) as exc:
            form.add_error("rubric_file" if data.get("rubric_file") else None, str(exc))
        else:
            messages.success(request, f"Study {study.name} created. Upload its items next.")
            return redirect("study-manage", slug=study.slug)
    return render(request, "annotation/study_create.html", {"form": form})
