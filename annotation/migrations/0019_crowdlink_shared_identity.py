from django.db import migrations, models


class Migration(migrations.Migration):
    """A panel id is a rater of one study unless a link says otherwise. Existing links get the rule
    (off); 0020 splits the accounts several studies' links already shared."""

    dependencies = [("annotation", "0018_rating_changes")]

    operations = [
        migrations.AddField(
            model_name="crowdlink",
            name="shared_identity",
            field=models.BooleanField(
                default=False,
                help_text="The same panel id is one rater in every study whose crowd link has this on."),
        ),
    ]
