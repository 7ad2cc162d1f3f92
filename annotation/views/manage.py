"""The admin's study management page: settings, lifecycle, members, invitations, item upload, change log.

Every form posts here with htmx (the answer is the form's own section of the page, plus the header
and the change log out of band) and works without JavaScript too: a success redirects back with a
message, a refusal shows the page again with the error next to its field. Only site admins and the
study's owner get here (annotation.access.get_study_for_manager); others get 403.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.auth_backend import PATH as AUTH_BACKEND
from annotation import selectors
from annotation.access import Can, can, get_study_for_manager, get_study_for_participants
from annotation.audit import Action, audit_download
from annotation.forms import (AddMembersForm, CrowdLinkForm, CrowdLinkRevokeForm, InvitationAcceptForm,
                              InvitationForm, InvitationRevokeForm, ItemUploadForm, MemberActionForm, StatusForm,
                              StudySettingsForm)
from annotation.importers import MAX_ERRORS, ItemFileError
from annotation.models import Study, StudyMember
from annotation.questionnaires import phases_dump
from annotation.services.phases import study_close_if_past_deadline
from annotation.services import invitations as invitation_services
from annotation.services import members as member_services
from annotation.traces.imports import file_import
from annotation.services.studies import NeedsConfirmation, StudyError, study_set_status, study_settings_update, \
    study_transitions

PAGE = "annotation/manage/page.html"
# Sections a success also refreshes, whatever form was sent: the status badge and the change log.
ALWAYS_FRESH = ("header", "setup", "lifecycle", "changes")


def manage_context(request: HttpRequest, study: Study, **forms) -> dict:
    study_close_if_past_deadline(study=study)  # the page shows the study closed once its deadline passed
    invitation_list = list(study.invitations.select_related("created_by")[:50])
    for inv in invitation_list:
        inv.problem = invitation_services.invitation_problem(inv)
        inv.state = ("active" if inv.problem is None else "revoked" if inv.revoked_at else
                     "used up" if inv.max_uses and inv.uses >= inv.max_uses else "expired")
        inv.link = request.build_absolute_uri(f"/invite/{inv.token}/")
    changes = list(study.changes.select_related("user")[:50])
    labels = {name: field.label for name, field in StudySettingsForm.base_fields.items()}
    for change in changes:
        change.label = labels.get(change.field, change.field.capitalize())
    return {
        "study": study,
        # the payment sheets and answers name participants: site admins only (annotation.access)
        "sees_participants": can(request.user, study, Can.PARTICIPANTS),
        "progress": selectors.study_progress(study),
        "members": selectors.study_members(study),
        "items": selectors.item_progress(study, limit=50),
        "transitions": study_transitions(study),
        "setup_steps": selectors.study_setup_steps(study) if study.status == Study.Status.DRAFT else None,
        "invitations": invitation_list,
        "changes": changes,
        "upload_form": forms.get("upload_form") or ItemUploadForm(),
        "members_form": forms.get("members_form") or AddMembersForm(),
        "settings_form": forms.get("settings_form") or StudySettingsForm(instance=study),
        "invitation_form": forms.get("invitation_form") or InvitationForm(),
        "crowd_links": _crowd_links(request, study),
        "crowd_form": forms.get("crowd_form") or CrowdLinkForm(),
        "phases_text": forms.get("phases_text", phases_dump(study.phases)),
        **{k: v for k, v in forms.items() if not k.endswith("_form")},
    }


def _crowd_links(request: HttpRequest, study: Study) -> list:
    from django.utils import timezone

    from annotation.services.crowd import crowd_study_url

    links = list(study.crowd_links.all()[:20])
    for link in links:
        # the panel's placeholders after the encoded address: build_absolute_uri would percent-encode the braces
        link.url = crowd_study_url(link, request.build_absolute_uri(f"/crowd/{link.token}/"))
        link.state = ("revoked" if link.revoked_at else "expired" if link.expires_at <= timezone.now() else "active")
        link.n_participants = link.participants.count()
        link.n_finished = link.participants.filter(finished_at__isnull=False).count()
        link.n_returned = link.participants.filter(returned_at__isnull=False).count()
    return links


def _answer(request: HttpRequest, study: Study, section: str, *, ok: str | None = None, status: int = 200,
            **forms) -> HttpResponse:
    """htmx: the section (with `ok` as its notice) and, on success, the header and change log out of
    band. Without htmx: redirect back with a message on success, else the whole page (errors shown)."""
    if not request.htmx:
        if ok is not None:
            messages.success(request, ok)
            return redirect(f"{request.build_absolute_uri(_manage_url(study))}#{section}")
        return render(request, PAGE, manage_context(request, study, **forms), status=status)
    context = manage_context(request, study, notice=ok, notice_for=section, **forms)
    html = render_to_string(f"{PAGE}#{section}", context, request=request)
    if ok is not None:
        for extra in ALWAYS_FRESH:
            if extra != section:
                html += render_to_string(f"{PAGE}#{extra}", {**context, "oob": True}, request=request)
    # htmx swaps only 2xx answers by default; a refusal is still a page part to show in place.
    return HttpResponse(html, status=200)


def _manage_url(study: Study) -> str:
    from django.urls import reverse

    return reverse("study-manage", args=[study.slug])


def manager_view(view):
    """Signed in, and refused with the site's own 403 page (not Django's bare one) when the user may
    not manage the study."""
    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied:
            return render(request, "annotation/forbidden.html", status=403)

    return wrapped


@manager_view
def study_manage(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    context = manage_context(request, study)
    if request.htmx and request.GET.get("fragment") == "progress":
        return render(request, f"{PAGE}#progress", context)
    return render(request, PAGE, context)


@manager_view
@require_POST
def study_settings(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    # A copy as the form's instance: a bound ModelForm writes into its instance while validating.
    form = StudySettingsForm(request.POST, instance=Study.objects.get(pk=study.pk))
    if form.is_valid():
        try:
            log = study_settings_update(study=study, user=request.user, changes=form.changes(),
                                        confirmed=form.cleaned_data["confirm"])
        except NeedsConfirmation as exc:
            form.add_error("confirm", f"{exc.ratings} ratings were already given. "
                                      + " ".join(f"{form.fields[f].label}: {c}." for f, c in exc.consequences)
                                      + " Tick to confirm, then save again.")
        except StudyError as exc:
            field, _, message = str(exc).partition(": ")
            form.add_error(field if field in form.fields else None, message or str(exc))
        else:
            ok = (f"Saved: {', '.join(str(form.fields[c.field].label).lower() for c in log)}." if log
                  else "Nothing changed.")
            return _answer(request, study, "settings", ok=ok)
    return _answer(request, study, "settings", settings_form=form, status=400)


@manager_view
@require_POST
def study_status(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = StatusForm(request.POST)
    if not form.is_valid():
        return _answer(request, study, "lifecycle", status_error="Choose a status the study can move to.", status=400)
    target = form.cleaned_data["status"]
    transition = next((t for t in study_transitions(study) if t.status == target), None)
    if transition is None:
        return _answer(request, study, "lifecycle", status=400,
                       status_error=f"A {study.get_status_display().lower()} study cannot become {target}.")
    if not form.cleaned_data["confirm"]:
        return _answer(request, study, "lifecycle", confirming=transition)
    try:
        study_set_status(study=study, status=target, user=request.user)
    except StudyError as exc:
        return _answer(request, study, "lifecycle", status_error=str(exc).partition(": ")[2], status=400)
    return _answer(request, study, "lifecycle", ok=f"Study is now {study.get_status_display().lower()}.")


@manager_view
@require_POST
def study_add_members(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = AddMembersForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data.get("csv_file")
        field = "csv_file" if upload else "names"
        try:
            if upload:
                rows = member_services.parse_csv(upload.read().decode("utf-8"))
            else:
                rows = member_services.parse_pasted(form.cleaned_data["names"])
            added = member_services.members_add(study=study, rows=rows, role=form.cleaned_data["role"],
                                                user=request.user)
        except UnicodeDecodeError:
            form.add_error(field, "The file is not UTF-8 text; nobody was added.")
        except member_services.MembersError as exc:
            for line, name, message in exc.errors:
                where = f"line {line}: " if line else ""
                form.add_error(field, f"{where}{name + ': ' if name else ''}{message}")
            form.add_error(field, "Nobody was added.")
        else:
            names = ", ".join(m.user.username for m in added)
            return _answer(request, study, "members", ok=f"Added {len(added)}: {names}.")
    return _answer(request, study, "members", members_form=form, status=400)


@manager_view
@require_POST
def study_member_status(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = MemberActionForm(request.POST)
    if not form.is_valid():
        return _answer(request, study, "members", member_error="Choose a member and an action.", status=400)
    action = {"pause": member_services.member_pause, "resume": member_services.member_resume,
              "remove": member_services.member_remove}[form.cleaned_data["action"]]
    try:
        member = action(study=study, user_id=form.cleaned_data["user"], user=request.user)
    except member_services.MembersError as exc:
        return _answer(request, study, "members", member_error=str(exc), status=400)
    released = f"; {member.released} open assignments went back to the pool" if member.released else ""
    return _answer(request, study, "members", ok=f"{member.shown_name} is {member.status}{released}.")


@manager_view
@require_POST
def study_upload_items(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = ItemUploadForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            count = file_import(study=study, file=upload, filename=upload.name)
        except ItemFileError as exc:
            form.add_error("file", f"{upload.name} was refused; nothing was imported. The problems:")
            return _answer(request, study, "upload", upload_form=form, upload_errors=exc.errors,
                           upload_errors_capped=len(exc.errors) >= MAX_ERRORS, status=400)
        except UnicodeDecodeError:
            form.add_error("file", f"{upload.name} is not UTF-8 text; nothing was imported.")
        else:
            return _answer(request, study, "upload", ok=f"Imported {count} items from {upload.name}.")
    return _answer(request, study, "upload", upload_form=form, status=400)


@manager_view
@require_POST
def study_invitations(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = InvitationForm(request.POST)
    if form.is_valid():
        try:
            invitation_services.invitation_create(study=study, user=request.user, days=form.cleaned_data["days"],
                                                  max_uses=form.cleaned_data["max_uses"])
        except invitation_services.InvitationError as exc:
            form.add_error(exc.field or None, exc.message)
        else:
            return _answer(request, study, "invitations", ok="Invitation link created: copy it from the list.")
    return _answer(request, study, "invitations", invitation_form=form, status=400)


@manager_view
@require_POST
def study_invitation_revoke(request: HttpRequest, slug: str) -> HttpResponse:
    study = get_study_for_manager(request.user, slug)
    form = InvitationRevokeForm(request.POST)
    try:
        if not form.is_valid():
            raise invitation_services.InvitationError("invitation", "choose an invitation")
        invitation_services.invitation_revoke(study=study, invitation_id=form.cleaned_data["invitation"],
                                              user=request.user)
    except invitation_services.InvitationError as exc:
        return _answer(request, study, "invitations", invitation_error=exc.message, status=400)
    return _answer(request, study, "invitations", ok="Invitation revoked: the link no longer works.")


# ---------------------------------------------------------------- the invitation link itself


@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Anyone with the link: create an annotator account (or join with the signed-in one)."""
    invitation = invitation_services.invitation_for_token(token)
    if invitation is None:
        return render(request, "annotation/manage/invitation.html", {"problem": "This invitation link is not valid."},
                      status=404)
    problem = invitation_services.invitation_problem(invitation)
    form = InvitationAcceptForm(request.POST or None) if not request.user.is_authenticated else None
    if request.method == "POST" and problem is None:
        try:
            if request.user.is_authenticated:
                invitation_services.invitation_join(token=token, user=request.user)
            elif form.is_valid():
                user = invitation_services.invitation_accept(token=token, username=form.cleaned_data["username"],
                                                             password=form.cleaned_data["password"])
                login(request, user, backend=AUTH_BACKEND)
            else:
                raise invitation_services.InvitationError("", "")
        except invitation_services.InvitationError as exc:
            if exc.field and form is not None:
                form.add_error(exc.field, exc.message)
            elif exc.message:
                problem = exc.message
        else:
            messages.success(request, f"Welcome to {invitation.study.name}.")
            role = (StudyMember.objects.filter(study=invitation.study, user=request.user)
                    .values_list("role", flat=True).first())
            if role == StudyMember.Role.ANNOTATOR and invitation.study.status == Study.Status.OPEN:
                return redirect("workspace", slug=invitation.study.slug)
            return redirect("home")
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/manage/invitation.html",
                  {"invitation": invitation, "study": invitation.study, "problem": problem, "form": form},
                  status=410 if problem else status)


# ---------------------------------------------------------------- crowd links

@manager_view
@require_POST
def study_crowd_links(request: HttpRequest, slug: str) -> HttpResponse:
    from annotation.services import crowd

    study = get_study_for_manager(request.user, slug)
    form = CrowdLinkForm(request.POST)
    if form.is_valid():
        try:
            crowd.crowd_link_create(study=study, user=request.user, **form.cleaned_data)
        except crowd.CrowdError as exc:
            form.add_error(exc.field or None, exc.message)
        else:
            return _answer(request, study, "crowd", ok="Crowd link created: give it to the panel as the study URL.")
    return _answer(request, study, "crowd", crowd_form=form, status=400)


@manager_view
@require_POST
def study_crowd_link_revoke(request: HttpRequest, slug: str) -> HttpResponse:
    from annotation.services import crowd

    study = get_study_for_manager(request.user, slug)
    form = CrowdLinkRevokeForm(request.POST)
    link = study.crowd_links.filter(pk=form.cleaned_data["link"]).first() if form.is_valid() else None
    if link is None:
        return _answer(request, study, "crowd", crowd_error="choose a link of this study", status=400)
    crowd.crowd_link_revoke(link=link, user=request.user)
    return _answer(request, study, "crowd", ok="Crowd link revoked: it no longer lets anyone in.")


def _amount_text(amount) -> str | None:
    return None if amount is None else str(amount)


@manager_view
@require_GET
def study_crowd_payments(request: HttpRequest, slug: str) -> HttpResponse:
    """The per-rater time and payment sheet (CSV); ?pay_per_item=0.15 adds what each approved rater earns,
    ?bonus_per_item=0.05 a bonus; ?format=bulk_approve or bulk_bonus gives the panel's paste formats."""
    import csv

    from annotation.datasets.spreadsheet import spreadsheet_safe
    from annotation.payments import PAYMENT_COLUMNS, bulk_approve_lines, bulk_bonus_lines, payment_amount, payment_rows

    study = get_study_for_participants(request.user, slug)
    amounts = {}
    for name in ("pay_per_item", "bonus_per_item"):
        raw = request.GET.get(name, "").strip()
        try:
            amounts[name] = payment_amount(raw, field=name)
        except ValueError as exc:
            return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    kind = request.GET.get("format", "sheet")
    if kind not in ("sheet", "bulk_approve", "bulk_bonus"):
        return HttpResponse("format: sheet, bulk_approve or bulk_bonus", status=400,
                            content_type="text/plain; charset=utf-8")
    if kind == "bulk_bonus" and amounts["bonus_per_item"] is None:
        return HttpResponse("bonus_per_item: needed for the bulk bonus list", status=400,
                            content_type="text/plain; charset=utf-8")
    rows = payment_rows(study, amounts["pay_per_item"], amounts["bonus_per_item"])
    name = f"{study.slug}-payments.csv" if kind == "sheet" else f'{study.slug}-{kind.replace("_", "-")}.csv'
    # the amounts as read (None: not asked), not the query's last raw value
    audit_download(actor=request.user, action=Action.PAYMENT_DOWNLOAD, study=study, target=name,
                   query=request.GET, format=kind, pay_per_item=_amount_text(amounts["pay_per_item"]),
                   bonus_per_item=_amount_text(amounts["bonus_per_item"]), participants=len(rows))
    if kind in ("bulk_approve", "bulk_bonus"):
        lines = bulk_approve_lines(rows) if kind == "bulk_approve" else bulk_bonus_lines(rows)
        response = HttpResponse("".join(f"{line}\n" for line in lines), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.DictWriter(response, fieldnames=PAYMENT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    return response
