"""The admin shows versioned and audited data but never edits it around the services."""
from __future__ import annotations

from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """Every field read-only; nothing added or deleted here. Changes go through the services (console,
    commands, or this admin's actions, which call them one object at a time)."""

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
