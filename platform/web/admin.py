from django.contrib import admin

from web.models import ExerciseJob


@admin.register(ExerciseJob)
class ExerciseJobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "exercise", "version", "status", "requested_by", "created_at")
    list_filter = ("kind", "status")
    readonly_fields = ("outcome", "error", "created_at", "started_at", "finished_at")
