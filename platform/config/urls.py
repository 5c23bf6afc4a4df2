from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("api.urls")),
    path("api/v1/", include("api.course_urls")),
    path("lti/", include("lti.urls")),
    path("", include("ops.urls")),  # /healthz/live, /healthz/ready
    path("", include("web.urls")),
]
