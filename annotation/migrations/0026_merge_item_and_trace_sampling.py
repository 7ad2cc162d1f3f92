# The two sampling fields were added on parallel branches; this joins their migrations.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0025_item_sampling_probability'),
        ('annotation', '0025_study_trace_sampling'),
    ]

    operations = [
    ]
