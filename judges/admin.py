import json

from django import forms
from django.contrib import admin
from django.utils.html import format_html

from .egress import key_variable_problem
from .masking import mask_backend_options, mask_judge, mask_url
from .models import JudgeCacheEntry, JudgeConfig, JudgeRun, JudgeScore


def _json(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, default=str))


class JudgeConfigForm(forms.ModelForm):
    class Meta:
        model = JudgeConfig
        exclude = ["endpoint", "backend_options"]

    def clean_api_key_env(self) -> str:
        name = self.cleaned_data.get("api_key_env") or ""
        if name and (problem := key_variable_problem(name)):  # as a loaded file is (judges.egress)
            raise forms.ValidationError(problem)
        return name


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    form = JudgeConfigForm
    list_display = ["name", "backend", "model", "method", "mode", "queue", "concurrency", "updated_at"]
    list_filter = ["backend", "method", "mode"]
    search_fields = ["name", "model"]
    # Shown masked and changed by loading the judge's file again: a form would show the secrets
    # an old judge may hold, and saving the mask back would overwrite them.
    exclude = ["endpoint", "backend_options"]
    readonly_fields = ["endpoint_masked", "backend_options_masked"]

    @admin.display(description="endpoint")
    def endpoint_masked(self, judge: JudgeConfig) -> str:
        return mask_url(judge.endpoint)

    @admin.display(description="backend options (credentials masked)")
    def backend_options_masked(self, judge: JudgeConfig) -> str:
        return _json(mask_backend_options(judge.backend_options))


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "judge", "status", "n_expected", "n_scored", "n_unparsed", "n_error",
                    "cost_usd", "created_at", "finished_at"]
    list_filter = ["status", "study"]
    raw_id_fields = ["study", "judge", "created_by"]
    exclude = ["config", "error", "key_parts"]
    readonly_fields = ["config_masked", "error_shown", "criteria", "created_at", "started_at", "finished_at"]

    @admin.display(description="config (credentials masked)")
    def config_masked(self, run: JudgeRun) -> str:
        return _json(mask_judge(run.config))


@admin.register(JudgeScore)
class JudgeScoreAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "item", "output", "criterion", "value", "status", "tokens_in", "tokens_out"]
    list_filter = ["status", "criterion"]
    raw_id_fields = ["run", "item", "output"]
    search_fields = ["item__external_id"]


@admin.register(JudgeCacheEntry)
class JudgeCacheEntryAdmin(admin.ModelAdmin):
    list_display = ["key", "created_at"]
    search_fields = ["key"]
