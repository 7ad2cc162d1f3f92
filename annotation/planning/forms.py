"""The plan page's GET form: planning inputs as typed fields, errors shown beside the field."""

from __future__ import annotations

from typing import Any

from django import forms

from config.parsers import NumberField, WholeNumberField

# field -> (label, help); every field is optional: an empty one is taken from the pilot or a default
FIELDS: dict[str, tuple[str, str]] = {
    "delta": ("Smallest difference worth detecting (δ)", "in the criterion's scale points; empty: no score plan"),
    "sd": ("SD of one rating (σ)", ""),
    "icc": ("Inter-rater reliability ICC(1) (ρ)", "0 to 1"),
    "corr": ("Correlation of the systems' true scores per item (c)", "−1 to just below 1"),
    "raters": ("Raters per output (R)", "the plan's R; the table shows 1 to 6"),
    "power": ("Power (1−β)", ""),
    "alpha": ("Level (α, two-sided)", ""),
    "win_prob": ("Win probability worth telling from 0.5 (p)", "or a Bradley–Terry difference"),
    "bt_diff": ("Bradley–Terry log-strength difference (d)", "p = 1/(1+e^(−d))"),
    "ties": ("Tie share (t)", "0 to just below 1"),
}


class PlanForm(forms.Form):
    criterion = forms.ChoiceField(required=False, label="Pilot criterion")
    delta = NumberField(required=False)
    sd = NumberField(required=False)
    icc = NumberField(required=False)
    corr = NumberField(required=False)
    raters = WholeNumberField(required=False, min_value=1, max_value=1000)
    power = NumberField(required=False)
    alpha = NumberField(required=False)
    win_prob = NumberField(required=False)
    bt_diff = NumberField(required=False)
    ties = NumberField(required=False)

    def __init__(self, *args: Any, criteria: list[tuple[str, str]], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fields["criterion"].choices = criteria
        for name, (label, help_text) in FIELDS.items():
            self.fields[name].label = label
            self.fields[name].help_text = help_text
            self.fields[name].widget.attrs.update({"step": "any", "style": "width:7rem"})

    def entered(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in FIELDS}
