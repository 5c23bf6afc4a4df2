from django.urls import URLPattern, URLResolver, path

from integrations import views

app_name = "integrations"

urlpatterns: list[URLPattern | URLResolver] = [
    path("courses/<slug:module>/tokens/", views.CourseTokenListApi.as_view(), name="token-list"),
    path(
        "courses/<slug:module>/tokens/<int:pk>/",
        views.CourseTokenDetailApi.as_view(),
        name="token-detail",
    ),
    path(
        "courses/<slug:module>/submissions/",
        views.CourseSubmissionListApi.as_view(),
        name="course-submission-list",
    ),
]
