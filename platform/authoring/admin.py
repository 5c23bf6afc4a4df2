"""The Exercise admin: here, not in courses/admin.py, because a changed schedule goes through
authoring.services.exercise_schedule_set (apps import only the apps before them)."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from authoring.services import exercise_schedule_set, schedule_problem
from courses.models import Exercise

# An exercise's schedule: written only through authoring.services.exercise_schedule_set,
# which marks the submissions late again and posts the changed grades to the LMS.
SCHEDULE_FIELDS = ("release_at", "due_at", "late_counts")


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
