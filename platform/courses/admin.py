from django.contrib import admin

from courses.models import Exercise, ExerciseVersion, Module


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
