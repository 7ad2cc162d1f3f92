from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0024_training_attempt_time_on_task'),
    ]

    operations = [
        migrations.AddField(
            model_name='item',
            name='sampling_probability',
            field=models.FloatField(blank=True, null=True),
        ),
    ]
