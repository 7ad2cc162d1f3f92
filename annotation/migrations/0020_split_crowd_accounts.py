"""A crowd account that several studies' links opened (the same panel id, found by the account's name,
before a panel id became a rater of one study) is split: the study it entered first keeps the
account; each other study gets an account of its own (`<name>.<study id>`, no password) holding that
study's membership, crowd entries, assignments (their ratings with them), training attempts, phase
records and the study's change-log and audit lines, which now name the new account. A participant
signed in to such a study enters again by the panel's link (it finds the moved crowd entry).

Accounts with a password (made by a person, not a link) are left alone. Only the pure name rule is
imported (annotation.audit); the models are the migration's own."""

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import migrations

from annotation.audit import replace_name, replace_name_in


def split_shared_crowd_accounts(apps, schema_editor=None) -> int:
    """Returns how many accounts were made."""
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    get = lambda name: apps.get_model("annotation", name)  # noqa: E731
    CrowdParticipant, StudyMember, Assignment = get("CrowdParticipant"), get("StudyMember"), get("Assignment")
    TrainingAttempt, PhaseRecord, StudyChange, AuditEntry = (get("TrainingAttempt"), get("PhaseRecord"),
                                                             get("StudyChange"), get("AuditEntry"))
    made = 0
    entries = CrowdParticipant.objects.select_related("user", "link").order_by("started_at", "id")
    studies_of: dict[int, list[int]] = {}
    for entry in entries:
        seen = studies_of.setdefault(entry.user_id, [])
        if entry.link.study_id not in seen:
            seen.append(entry.link.study_id)
    for user_id, studies in studies_of.items():
        user = User.objects.get(pk=user_id)
        if len(studies) < 2 or (user.password and not user.password.startswith("!")):
            continue
        old = user.username
        for study_id in studies[1:]:  # the first study keeps the account
            name, n = f"{old[:120]}.{study_id}", 1
            while User.objects.filter(username=name).exists():
                name, n = f"{old[:120]}.{study_id}-{n}", n + 1
            new = User.objects.create(username=name, password=make_password(None))
            made += 1
            StudyMember.objects.filter(study_id=study_id, user_id=user_id).update(user=new)
            CrowdParticipant.objects.filter(link__study_id=study_id, user_id=user_id).update(user=new)
            Assignment.objects.filter(study_id=study_id, rater_id=user_id).update(rater=new)
            TrainingAttempt.objects.filter(study_id=study_id, rater_id=user_id).update(rater=new)
            PhaseRecord.objects.filter(study_id=study_id, rater_id=user_id).update(rater=new)
            StudyChange.objects.filter(study_id=study_id, user_id=user_id).update(user=new)
            AuditEntry.objects.filter(study_id=study_id, actor_id=user_id).update(actor=new)
            for change in StudyChange.objects.filter(study_id=study_id):
                texts = (change.field, change.old, change.new)
                renamed = tuple(replace_name(t, old, name) for t in texts)
                if renamed != texts:
                    change.field, change.old, change.new = renamed[0][:80], renamed[1], renamed[2]
                    change.save(update_fields=["field", "old", "new"])
            for audit in AuditEntry.objects.filter(study_id=study_id):
                before = (audit.actor_name, audit.target, audit.detail)
                after = (name if audit.actor_name == old else audit.actor_name,
                         replace_name(audit.target, old, name)[:200], replace_name_in(audit.detail, old, name))
                if after != before:
                    audit.actor_name, audit.target, audit.detail = after
                    audit.save(update_fields=["actor_name", "target", "detail"])
    return made


class Migration(migrations.Migration):
    dependencies = [("annotation", "0019_crowdlink_shared_identity"),
                    migrations.swappable_dependency(settings.AUTH_USER_MODEL)]

    operations = [migrations.RunPython(split_shared_crowd_accounts, migrations.RunPython.noop, elidable=False)]
