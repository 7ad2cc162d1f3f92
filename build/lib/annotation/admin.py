from django.contrib import admin

from .models import Assignment, Item, Output, Rating, Study, StudyMember


class StudyMemberInline(admin.TabularInline):
    model = StudyMember
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "rubric_version", "status", "raters_per_item", "created_at"]
    list_filter = ["status"]
    search_fields = ["slug", "name"]
    inlines = [StudyMemberInline]


class OutputInline(admin.TabularInline):
    model = Output
    extra = 0


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "study", "context_kind", "is_attention_check"]
    list_filter = ["study", "is_attention_check"]
    search_fields = ["external_id"]
    inlines = [OutputInline]
    list_select_related = ["study"]


@admin.register(Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ["item", "position", "system", "kind"]
    list_filter = ["kind", "system"]
    list_select_related = ["item"]
    raw_id_fields = ["item"]


@admin.register(StudyMember)
class StudyMemberAdmin(admin.ModelAdmin):
    list_display = ["study", "user", "role", "paused"]
    list_filter = ["role", "paused", "study"]


class RatingInline(admin.TabularInline):
    model = Rating
    extra = 0
    raw_id_fields = ["output"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["study", "item", "rater", "status", "created_at", "submitted_at"]
    list_filter = ["status", "study"]
    raw_id_fields = ["item", "rater"]
    inlines = [RatingInline]
    list_select_related = ["study", "item", "rater"]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["assignment", "output", "criterion", "value", "score"]
    list_filter = ["criterion"]
    raw_id_fields = ["assignment", "output"]
