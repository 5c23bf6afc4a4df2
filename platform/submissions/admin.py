from django.contrib import admin

from submissions.models import CheckResult, Submission


class CheckResultInline(admin.TabularInline):
    model = CheckResult
    extra = 0


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "learner", "exercise", "status", "score", "passed", "created_at")
    list_filter = ("status", "exercise")
    inlines = [CheckResultInline]
