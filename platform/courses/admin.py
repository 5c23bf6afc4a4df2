from django.contrib import admin

from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module


@admin.register(Module)
class ModuleAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "order")


@admin.register(Exercise)
class ExerciseAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "module", "kind", "points", "device", "current_version")


@admin.register(ExerciseVersion)
class ExerciseVersionAdmin(admin.ModelAdmin):
    list_display = ("exercise", "number", "content_hash", "created_at")
    exclude = ("hidden_seed",)


@admin.register(ExerciseJob)
class ExerciseJobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "exercise", "version", "status", "requested_by", "created_at")
    list_filter = ("kind", "status")
    readonly_fields = ("outcome", "error", "attempts", "created_at", "started_at", "finished_at")
