from django.contrib import admin

from .models import JudgeCacheEntry, JudgeConfig, JudgeRun, JudgeScore


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "backend", "model", "method", "mode", "queue", "concurrency", "updated_at"]
    list_filter = ["backend", "method", "mode"]
    search_fields = ["name", "model"]


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "judge", "status", "n_expected", "n_scored", "n_unparsed", "n_error",
                    "cost_usd", "created_at", "finished_at"]
    list_filter = ["status", "study"]
    raw_id_fields = ["study", "judge", "created_by"]
    readonly_fields = ["config", "criteria", "created_at", "started_at", "finished_at"]


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
