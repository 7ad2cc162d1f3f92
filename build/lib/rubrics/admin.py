import json

from django.contrib import admin
from django.utils.html import format_html

from .models import Rubric, RubricVersion


class RubricVersionInline(admin.TabularInline):
    model = RubricVersion
    fields = ["version", "checksum", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "is_preset", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [RubricVersionInline]


@admin.register(RubricVersion)
class RubricVersionAdmin(admin.ModelAdmin):
    """Versions are immutable: add new ones with `load_rubric` or the study page."""

    list_display = ["rubric", "version", "checksum", "created_at"]
    list_filter = ["rubric"]
    readonly_fields = ["rubric", "version", "checksum", "created_by", "created_at", "pretty_definition"]
    exclude = ["definition"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="definition")
    def pretty_definition(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.definition, indent=2, ensure_ascii=False))
