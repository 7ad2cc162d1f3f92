# Issue 56 §2: the OTLP intake's sampling rule, stored per study.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0024_training_attempt_time_on_task'),
    ]

    operations = [
        migrations.AddField(
            model_name='study',
            name='trace_sampling',
            field=models.JSONField(blank=True, db_default={}, default=dict),
        ),
    ]
