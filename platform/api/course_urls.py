"""The course endpoints under /api/v1/ (api.courses), in the URL namespace "integrations"
they always had (reversed by that name)."""

from django.urls import URLPattern, URLResolver, path

from api import courses

app_name = "integrations"

urlpatterns: list[URLPattern | URLResolver] = [
    path("courses/<slug:module>/tokens/", courses.CourseTokenListApi.as_view(), name="token-list"),
    path(
        "courses/<slug:module>/tokens/<int:pk>/",
        courses.CourseTokenDetailApi.as_view(),
        name="token-detail",
    ),
    path(
        "courses/<slug:module>/submissions/",
        courses.CourseSubmissionListApi.as_view(),
        name="course-submission-list",
    ),
    path("courses/<slug:module>/members/", courses.MemberListApi.as_view(), name="member-list"),
    path(
        "courses/<slug:module>/members/<str:username>/",
        courses.MemberDetailApi.as_view(),
        name="member-detail",
    ),
    path(
        "courses/<slug:module>/roster.csv",
        courses.RosterImportApi.as_view(),
        name="roster-import",
    ),
    path("courses/<slug:module>/webhooks/", courses.WebhookListApi.as_view(), name="webhook-list"),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/",
        courses.WebhookDetailApi.as_view(),
        name="webhook-detail",
    ),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/rotate-secret/",
        courses.WebhookSecretRotateApi.as_view(),
        name="webhook-rotate-secret",
    ),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/deliveries/",
        courses.WebhookDeliveryListApi.as_view(),
        name="webhook-delivery-list",
    ),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/deliveries/<int:delivery>/redeliver/",
        courses.WebhookRedeliverApi.as_view(),
        name="webhook-redeliver",
    ),
]
