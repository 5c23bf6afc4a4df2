from django.contrib import admin

from courses.models import ExerciseJob, ExerciseVersion, Module

# The Exercise admin is authoring/admin.py's: its schedule is written through
# authoring.services, an app after this one.


@admin.register(Module)
class ModuleAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "order")


@admin.register(ExerciseVersion)
class ExerciseVersionAdmin(admin.ModelAdmin):
    list_display = ("exercise", "number", "content_hash", "created_at")
    exclude = ("hidden_seed",)


@admin.register(ExerciseJob)
class ExerciseJobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "exercise", "version", "status", "requested_by", "created_at")
    list_filter = ("kind", "status")
    readonly_fields = ("outcome", "error", "attempts", "created_at", "started_at", "finished_at")
