from django.db import migrations, models


def mark_outcomes(apps, schema_editor):
    """Runs that ended `done` before these states existed say what happened: `failed` when every
    slot is an error, `done_with_errors` when some are."""
    JudgeRun = apps.get_model("judges", "JudgeRun")
    done = JudgeRun.objects.filter(status="done", n_error__gt=0)
    done.filter(n_scored=0, n_unparsed=0, n_refusal=0, n_truncated=0).update(
        status="failed", error="no call succeeded: every slot ended in error")
    done.update(status="done_with_errors")


class Migration(migrations.Migration):
    dependencies = [("judges", "0007_budget_and_batches")]

    operations = [
        migrations.AlterField(
            model_name="judgerun", name="status",
            field=models.CharField(choices=[("queued", "Queued"), ("running", "Running"), ("done", "Done"),
                                            ("done_with_errors", "Done with errors"), ("cancelled", "Cancelled"),
                                            ("failed", "Failed"), ("paused", "Paused")],
                                   default="queued", max_length=20),
        ),
        migrations.AddField(
            model_name="judgerun", name="n_reused",
            field=models.PositiveIntegerField(default=0, help_text="Scores copied from reused_from (no model was asked)."),
        ),
        migrations.RunPython(mark_outcomes, migrations.RunPython.noop),
    ]
