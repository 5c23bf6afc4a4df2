from django.contrib import admin

from accounts.models import Enrollment


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ("user", "module", "role", "created_at")
    list_filter = ("role", "module")
