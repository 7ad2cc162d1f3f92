from django.db import migrations, models


class Migration(migrations.Migration):
    """A crowd participant is held by one browser at a time; pages that show participants' data are audited."""

    dependencies = [("annotation", "0020_split_crowd_accounts")]

    operations = [
        migrations.AddField(model_name="crowdparticipant", name="browser_key_hash",
                            field=models.CharField(blank=True, max_length=64)),
        migrations.AddField(model_name="crowdparticipant", name="session_key",
                            field=models.CharField(blank=True, max_length=40)),
        migrations.AddField(model_name="crowdparticipant", name="seen_at",
                            field=models.DateTimeField(blank=True, help_text="The holding browser's latest entry.",
                                                       null=True)),
        migrations.AlterField(
            model_name="auditentry", name="action",
            field=models.CharField(choices=[
                ("data_download", "Data download"), ("payment_download", "Payment sheet download"),
                ("participant_download", "Participant's data download"),
                ("participant_erase", "Participant's data erased"), ("ids_purge", "Panel ids purged (retention)"),
                ("member_change", "Member change"), ("setting_change", "Setting change"),
                ("release", "Dataset release"), ("personal_page", "Page with participants' data viewed")],
                max_length=32),
        ),
    ]
