from django.urls import URLPattern, URLResolver, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api import authoring, drafts, mastery, views

app_name = "api"

urlpatterns: list[URLPattern | URLResolver] = [
    path("exercises/", views.ExerciseListApi.as_view(), name="exercise-list"),
    path("exercises/<slug:slug>/", views.ExerciseDetailApi.as_view(), name="exercise-detail"),
    path("exercises/<slug:slug>/draft/", drafts.LearnerDraftApi.as_view(), name="exercise-draft"),
    path("submissions/", views.SubmissionListCreateApi.as_view(), name="submission-list"),
    path("submissions/<int:pk>/", views.SubmissionDetailApi.as_view(), name="submission-detail"),
    path("modules/<slug:module>/mastery/", mastery.MyMasteryApi.as_view(), name="mastery-own"),
    path(
        "modules/<slug:module>/mastery/class/",
        mastery.ClassMasteryApi.as_view(),
        name="mastery-class",
    ),
    path(
        "modules/<slug:module>/mastery/learners/<int:user_id>/",
        mastery.LearnerMasteryApi.as_view(),
        name="mastery-learner",
    ),
    path("authoring/modules/", authoring.ModuleListApi.as_view(), name="authoring-modules"),
    path(
        "authoring/modules/<slug:module>/archive/",
        authoring.ModuleArchiveApi.as_view(),
        name="authoring-module-archive",
    ),
    path(
        "authoring/modules/<slug:module>/members/",
        authoring.MemberApi.as_view(),
        name="authoring-members",
    ),
    path(
        "authoring/modules/<slug:module>/objectives/",
        authoring.ObjectivesApi.as_view(),
        name="authoring-objectives",
    ),
    path(
        "authoring/modules/<slug:module>/exercises/",
        authoring.ExerciseListApi.as_view(),
        name="authoring-exercises",
    ),
    *(
        path(f"authoring/modules/<slug:module>/exercises/<slug:slug>/{part}", view, name=name)
        for part, view, name in (
            ("", authoring.DraftApi.as_view(), "authoring-draft"),
            ("archive/", authoring.DraftArchiveApi.as_view(), "authoring-draft-archive"),
            ("validate/", authoring.ValidateApi.as_view(), "authoring-validate"),
            ("publish/", authoring.PublishApi.as_view(), "authoring-publish"),
            ("unpublish/", authoring.UnpublishApi.as_view(), "authoring-unpublish"),
            ("schedule/", authoring.ScheduleApi.as_view(), "authoring-schedule"),
            (
                "schedule/preview/",
                authoring.SchedulePreviewApi.as_view(),
                "authoring-schedule-preview",
            ),
            ("diff/", authoring.DiffApi.as_view(), "authoring-diff"),
        )
    ),
    path("authoring/jobs/<int:pk>/", authoring.JobApi.as_view(), name="authoring-job"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
