from django.contrib import admin

from .models import Assignment, Item, Output, Rating, Study, StudyChange, StudyInvitation, StudyMember


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
    list_display = ["study", "user", "role", "paused", "removed_at"]
    list_filter = ["role", "paused", "study"]


@admin.register(StudyChange)
class StudyChangeAdmin(admin.ModelAdmin):
    """The change log is a record: read here, written only by the services."""

    list_display = ["study", "at", "user", "field", "old", "new"]
    list_filter = ["study", "field"]
    list_select_related = ["study", "user"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(StudyInvitation)
class StudyInvitationAdmin(admin.ModelAdmin):
    list_display = ["study", "role", "uses", "max_uses", "expires_at", "revoked_at", "created_by"]
    list_filter = ["study"]
    readonly_fields = ["token", "uses"]


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
