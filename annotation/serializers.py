from rest_framework import serializers

from annotation.models import Study
from annotation.services.studies import RETENTION_DAYS_MAX
from config.limits import upload_validator
from rubrics.models import RubricVersion


class RubricVersionSerializer(serializers.ModelSerializer):
    slug = serializers.CharField(source="rubric.slug", read_only=True)
    name = serializers.CharField(source="rubric.name", read_only=True)

    class Meta:
        model = RubricVersion
        fields = ["id", "slug", "name", "version", "checksum", "definition", "created_at"]
        read_only_fields = fields


class StudySerializer(serializers.ModelSerializer):
    rubric_version = serializers.PrimaryKeyRelatedField(queryset=RubricVersion.objects.all())

    class Meta:
        model = Study
        fields = ["id", "slug", "name", "rubric_version", "instructions", "raters_per_item", "presentation",
                  "randomize_items", "randomize_outputs", "counterbalance", "attention_check_rate", "retention_days", "sampling_policy",
                  "trace_sampling", "status", "created_at"]
        read_only_fields = ["id", "status", "created_at"]
        extra_kwargs = {"slug": {"required": False}, "retention_days": {"max_value": RETENTION_DAYS_MAX}}


class StudyStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Study.Status.choices)


class MembersSerializer(serializers.Serializer):
    usernames = serializers.ListField(child=serializers.CharField(), min_length=1)
    role = serializers.ChoiceField(choices=["annotator", "researcher"])


class ItemUploadSerializer(serializers.Serializer):
    file = serializers.FileField(validators=[upload_validator("upload.items", name="items file")])


class ProgressSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    slots = serializers.IntegerField()
    submitted = serializers.IntegerField()
    active = serializers.IntegerField()
    items_complete = serializers.IntegerField()
    percent = serializers.FloatField()
