from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from authoring.services import exercise_schedule_set, schedule_problem
from courses.models import Exercise, ExerciseJob, ExerciseVersion, Module

# An exercise's schedule: written only through authoring.services.exercise_schedule_set,
# which marks the submissions late again and posts the changed grades to the LMS.
SCHEDULE_FIELDS = ("release_at", "due_at", "late_counts")


@admin.register(Module)
class ModuleAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "order")


class ExerciseAdminForm(forms.ModelForm):
    class Meta:
        model = Exercise
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        problem = schedule_problem(release_at=data.get("release_at"), due_at=data.get("due_at"))
        if problem:
            self.add_error("due_at", problem)
        return data


@admin.register(Exercise)
class ExerciseAdmin(admin.ModelAdmin):
    form = ExerciseAdminForm
    list_display = ("slug", "title", "module", "kind", "points", "device", "current_version")

    def save_model(self, request: HttpRequest, obj: Exercise, form: Any, change: bool) -> None:
        """The other fields as the admin saves them; a changed schedule through the service
        (the row keeps its old schedule until then, so the service sees what changed)."""
        if not change or not set(SCHEDULE_FIELDS) & set(form.changed_data):
            super().save_model(request, obj, form, change)
            return
        schedule = {field: getattr(obj, field) for field in SCHEDULE_FIELDS}
        stored = Exercise.objects.values(*SCHEDULE_FIELDS).get(pk=obj.pk)
        for field, value in stored.items():
            setattr(obj, field, value)
        super().save_model(request, obj, form, change)
        exercise_schedule_set(exercise=obj, **schedule)


@admin.register(ExerciseVersion)
class ExerciseVersionAdmin(admin.ModelAdmin):
    list_display = ("exercise", "number", "content_hash", "created_at")
    exclude = ("hidden_seed",)


@admin.register(ExerciseJob)
class ExerciseJobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "exercise", "version", "status", "requested_by", "created_at")
    list_filter = ("kind", "status")
    readonly_fields = ("outcome", "error", "attempts", "created_at", "started_at", "finished_at")
