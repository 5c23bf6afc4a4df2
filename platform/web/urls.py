from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path

from web.views import authoring, instructor, learner, signin

app_name = "web"

urlpatterns: list[URLPattern | URLResolver] = [
    path("accounts/login/", signin.SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="web:login"), name="logout"),
    path("", learner.home, name="home"),
    path("modules/<slug:module_slug>/", learner.module_page, name="module"),
    path(
        "modules/<slug:module_slug>/<slug:exercise_slug>/",
        learner.exercise_page,
        name="exercise",
    ),
    path("submissions/<int:submission_id>/", learner.submission_page, name="submission"),
    path(
        "submissions/<int:submission_id>/status/",
        learner.submission_status,
        name="submission_status",
    ),
    path("teach/<slug:module_slug>/", instructor.teach_module, name="teach_module"),
    path("teach/<slug:module_slug>/grades.csv", instructor.grades_csv, name="grades_csv"),
    path(
        "teach/<slug:module_slug>/submissions/<int:submission_id>/review/",
        instructor.review_submission,
        name="review_submission",
    ),
    path(
        "teach/<slug:module_slug>/learners/<int:user_id>/",
        instructor.teach_learner,
        name="teach_learner",
    ),
    path(
        "teach/<slug:module_slug>/exercises/<slug:exercise_slug>/",
        instructor.teach_exercise,
        name="teach_exercise",
    ),
    path(
        "teach/<slug:module_slug>/exercises/<slug:exercise_slug>/validate/",
        instructor.validate_exercise,
        name="validate_exercise",
    ),
    path(
        "teach/<slug:module_slug>/exercises/<slug:exercise_slug>/regrade-preview/",
        instructor.regrade_preview,
        name="regrade_preview",
    ),
    path(
        "teach/<slug:module_slug>/exercises/<slug:exercise_slug>/regrade/",
        instructor.regrade_exercise,
        name="regrade_exercise",
    ),
    path("teach/<slug:module_slug>/author/", authoring.author_module, name="author_module"),
    path(
        "teach/<slug:module_slug>/author/archive/",
        authoring.module_archive,
        name="author_module_archive",
    ),
    *(
        path(f"teach/<slug:module_slug>/author/<slug:exercise_slug>/{part}", view, name=name)
        for part, view, name in (
            ("", authoring.author_exercise, "author_exercise"),
            ("preview-statement/", authoring.statement_preview, "author_statement_preview"),
            ("validation/", authoring.validation_status, "author_validation"),
            ("try/", authoring.try_exercise, "author_try"),
            ("diff/", authoring.version_diff, "author_diff"),
        )
    ),
]
