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
    path("courses/<slug:module>/members/", views.MemberListApi.as_view(), name="member-list"),
    path(
        "courses/<slug:module>/members/<str:username>/",
        views.MemberDetailApi.as_view(),
        name="member-detail",
    ),
    path(
        "courses/<slug:module>/roster.csv",
        views.RosterImportApi.as_view(),
        name="roster-import",
    ),
    path("courses/<slug:module>/webhooks/", views.WebhookListApi.as_view(), name="webhook-list"),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/",
        views.WebhookDetailApi.as_view(),
        name="webhook-detail",
    ),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/deliveries/",
        views.WebhookDeliveryListApi.as_view(),
        name="webhook-delivery-list",
    ),
    path(
        "courses/<slug:module>/webhooks/<int:pk>/deliveries/<int:delivery>/redeliver/",
        views.WebhookRedeliverApi.as_view(),
        name="webhook-redeliver",
    ),
]
