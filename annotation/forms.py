from django import forms
from django.core.validators import MaxValueValidator
from django.utils.translation import gettext_lazy as _

from annotation.models import CrowdLink, Study, StudyMember
from annotation.services.studies import RETENTION_DAYS_MAX
from rubrics.models import RubricVersion
from config.limits import upload_validator
from config.parsers import NumberField, WholeNumberField


class StudyCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=80, required=False, help_text="Left empty: made from the name.")
    rubric_version = forms.ModelChoiceField(
        queryset=RubricVersion.objects.select_related("rubric"), required=False,
        help_text="A preset or an uploaded rubric (its version is pinned to the study).",
    )
    rubric_file = forms.FileField(required=False, help_text="Or upload a rubric (YAML/JSON, docs/rubric-format.md).",
                                  validators=[upload_validator("upload.rubric", name="rubric file")])
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    raters_per_item = WholeNumberField(min_value=1, max_value=50, initial=3)
    presentation = forms.ChoiceField(choices=Study.Presentation.choices, initial=Study.Presentation.SIDE_BY_SIDE)
    randomize_items = forms.BooleanField(required=False, initial=True)
    randomize_outputs = forms.BooleanField(required=False, initial=True)
    counterbalance = forms.BooleanField(required=False, initial=True)
    attention_check_rate = NumberField(min_value=0, max_value=1, initial=0.0)

    def clean(self):
        data = super().clean()
        if not data.get("rubric_version") and not data.get("rubric_file"):
            raise forms.ValidationError("Pick a rubric or upload one.")
        return data


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="JSONL or CSV (docs/item-format.md), or a trace or eval log: OTLP JSON, Inspect AI, "
                                     "Langfuse, Phoenix, OpenAI chat or Responses JSONL. Validated whole; all or nothing.",
                           validators=[upload_validator("upload.items", name="items file")])


# ---------------------------------------------------------------- study management (annotation/views/manage.py)


class AddMembersForm(forms.Form):
    names = forms.CharField(
        label="Usernames or emails", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Paste many, separated by commas or new lines. All or nothing: an unknown name refuses the list.")
    csv_file = forms.FileField(label="Or a CSV file", required=False,
                               help_text="One member per line: username[,email][,role]; a header line is optional.",
                               validators=[upload_validator("upload.members", name="members file")])
    role = forms.ChoiceField(choices=StudyMember.Role.choices, initial=StudyMember.Role.ANNOTATOR,
                             help_text="For every name (a CSV line's own role wins).")

    def clean(self):
        data = super().clean()
        if not (data.get("names") or "").strip() and not data.get("csv_file"):
            self.add_error("names", "Give at least one username or email, or choose a CSV file.")
        return data


class MemberActionForm(forms.Form):
    user = WholeNumberField(widget=forms.HiddenInput)
    action = forms.ChoiceField(choices=[("pause", "Pause"), ("resume", "Resume"), ("remove", "Remove")])


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=Study.Status.choices)
    confirm = forms.BooleanField(required=False)


class StudySettingsForm(forms.ModelForm):
    """The settings an admin may change after creation (annotation.services.studies.EDITABLE)."""

    confirm = forms.BooleanField(
        required=False, label="I understand: apply the change to a study with ratings",
        help_text="Needed when a change affects ratings already given.")

    class Meta:
        model = Study
        fields = ["name", "instructions", "raters_per_item", "assignment_expiry_minutes", "randomize_items",
                  "randomize_outputs", "counterbalance", "attention_check_rate", "attention_fail_pause",
                  "training_pass_mark", "deadline", "retention_days", "language", "sampling_policy", "trace_sampling"]
        labels = {"name": "Title", "sampling_policy": "Sampling policy", "trace_sampling": "Trace sampling (OTLP)", "language": "Raters' language", "randomize_items": "Shuffle items per rater",
                  "randomize_outputs": "Shuffle responses within an item",
                  "counterbalance": "Counterbalance response order across raters",
                  "attention_check_rate": "Attention checks (share of items, 0–1)",
                  "attention_fail_pause": "Pause a rater after failed checks",
                  "training_pass_mark": "Training pass mark (share, 0–1)",
                  "assignment_expiry_minutes": "Assignment expiry (minutes)",
                  "retention_days": "Keep panel ids (days)"}
        help_texts = {"attention_fail_pause": "After this many failed checks (0: never).",
                      "training_pass_mark": "Raters first answer the training items (upload them with "
                                            "\"training\": true) and need this share right; one retry. "
                                            "Empty: no training.",
                      "instructions": "Markdown, shown to raters beside the rubric's guide.",
                      "deadline": "Planned end, for the team; nothing closes by itself.",
                      "assignment_expiry_minutes": "An item a rater leaves this long goes back to the pool. "
                                                   "Empty: the site's default.",
                      "sampling_policy": 'Empty: every item gets the raters above. {"name": "adaptive_redundancy", '
                                         '"min_raters": 2, "max_raters": 9, "target": 0.83}: another rater while '
                                         'an item\'s answer is unsure. {"name": "active_pairs", "random_share": 0.2}: '
                                         'pairs that separate the systems (pairwise rubrics). '
                                         '{"name": "active_inference", "budget": 100}: about 100 items go to humans, '
                                         'most where the judges disagree (manage.py draw_humans draws each round; '
                                         'the Plan page predicts the saving).',
                      "trace_sampling": 'Which traces sent to the OTLP endpoint reach the raters. Empty: all. '
                                        '{"rate": 0.2, "flags": ["unacceptable"]}: every trace an evaluator '
                                        'labelled unacceptable and a random fifth of the rest; each item records '
                                        'its inclusion probability for weighting.'}
        widgets = {"instructions": forms.Textarea(attrs={"rows": 4}), "sampling_policy": forms.Textarea(attrs={"rows": 2}),
                   "trace_sampling": forms.Textarea(attrs={"rows": 2}),
                   "deadline": forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["raters_per_item"].min_value = 1
        self.fields["raters_per_item"].widget.attrs["min"] = 1
        self.fields["attention_check_rate"].widget.attrs.update(min=0, max=1, step="0.01")
        self.fields["training_pass_mark"].widget.attrs.update(min=0, max=1, step="0.05", placeholder="no training")
        self.fields["retention_days"].validators.append(MaxValueValidator(RETENTION_DAYS_MAX))
        self.fields["retention_days"].widget.attrs["max"] = RETENTION_DAYS_MAX
        self.fields["assignment_expiry_minutes"].widget.attrs.update(min=1, placeholder="site default")

    def clean_raters_per_item(self):
        value = self.cleaned_data["raters_per_item"]
        if value is not None and value < 1:
            raise forms.ValidationError("At least 1 rater per item.")
        return value

    def clean_attention_check_rate(self):
        value = self.cleaned_data["attention_check_rate"]
        if value is not None and not 0 <= value <= 1:
            raise forms.ValidationError("A share between 0 and 1 (0.1 is one item in ten).")
        return value

    def clean_training_pass_mark(self):
        value = self.cleaned_data["training_pass_mark"]
        if value is not None and not 0 < value <= 1:
            raise forms.ValidationError("A share above 0 and at most 1 (0.8: four in five right); empty for no training.")
        return value

    def clean_sampling_policy(self):
        return self.cleaned_data["sampling_policy"] or {}  # empty: the uniform design

    def clean_trace_sampling(self):
        return self.cleaned_data["trace_sampling"] or {}  # empty: every trace kept

    def changes(self) -> dict:
        return {f: self.cleaned_data[f] for f in self.Meta.fields}


class InvitationForm(forms.Form):
    days = WholeNumberField(label="Valid for (days)", min_value=1, max_value=90, initial=7)
    max_uses = WholeNumberField(label="Uses", required=False, min_value=1, initial=1,
                                  help_text="1: a single person. Empty: any number (a link to share with a group).")


class CrowdLinkForm(forms.Form):
    provider = forms.ChoiceField(label="Panel", choices=CrowdLink.Provider.choices, initial="prolific")
    completion_code = forms.CharField(label="Completion code", required=False, max_length=64,
                                      help_text="Prolific: the study's completion code, shown to participants at the end.")
    completion_url = forms.URLField(label="Return address", required=False, max_length=500, assume_scheme="https",
                                    help_text="Where participants go when done (Prolific's is made from the code).")
    time_limit_minutes = WholeNumberField(label="Time limit (minutes)", required=False, min_value=1)
    items_per_participant = WholeNumberField(label="Items per participant", required=False, min_value=1)
    days = WholeNumberField(label="Valid for (days)", min_value=1, max_value=90, initial=30)
    shared_identity = forms.BooleanField(
        label="Same panel id, same rater across studies", required=False,
        help_text="Site administrators only. Off, a panel id is a rater of this study alone; on, it is one rater "
                  "in every study whose crowd link has this on (a longitudinal panel, say).")


class CrowdLinkRevokeForm(forms.Form):
    link = WholeNumberField(widget=forms.HiddenInput)


class InvitationRevokeForm(forms.Form):
    invitation = WholeNumberField(widget=forms.HiddenInput)


class InvitationAcceptForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150, help_text=_("Letters, digits and @.+-_ only."))
    password = forms.CharField(label=_("Password"), widget=forms.PasswordInput,
                               help_text=_("At least 8 characters, not too common."))
    password2 = forms.CharField(label=_("Password again"), widget=forms.PasswordInput)

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password2") and data["password"] != data["password2"]:
            self.add_error("password2", _("The two passwords differ."))
        return data
