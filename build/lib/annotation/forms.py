from django import forms

from annotation.models import Study, StudyMember
from rubrics.models import RubricVersion


class StudyCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=80, required=False, help_text="Left empty: made from the name.")
    rubric_version = forms.ModelChoiceField(
        queryset=RubricVersion.objects.select_related("rubric"), required=False,
        help_text="A preset or an uploaded rubric (its version is pinned to the study).",
    )
    rubric_file = forms.FileField(required=False, help_text="Or upload a rubric (YAML/JSON, docs/rubric-format.md).")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    raters_per_item = forms.IntegerField(min_value=1, max_value=50, initial=3)
    presentation = forms.ChoiceField(choices=Study.Presentation.choices, initial=Study.Presentation.SIDE_BY_SIDE)
    randomize_items = forms.BooleanField(required=False, initial=True)
    randomize_outputs = forms.BooleanField(required=False, initial=True)
    counterbalance = forms.BooleanField(required=False, initial=True)
    attention_check_rate = forms.FloatField(min_value=0, max_value=1, initial=0.0)

    def clean(self):
        data = super().clean()
        if not data.get("rubric_version") and not data.get("rubric_file"):
            raise forms.ValidationError("Pick a rubric or upload one.")
        return data


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="JSONL or CSV (docs/item-format.md). Validated whole; all or nothing.")


class MembersForm(forms.Form):
    usernames = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="One username per line or comma.")
    role = forms.ChoiceField(choices=StudyMember.Role.choices)

    def usernames_list(self) -> list[str]:
        return [n for n in self.cleaned_data["usernames"].replace(",", "\n").splitlines() if n.strip()]
