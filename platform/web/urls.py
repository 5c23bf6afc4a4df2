from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, path

from web.views import compare, deadlines, enrolment, instructor, learner, signin
from web.views.authoring import editor, history, members, module, preview, publishing

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
    path(
        "modules/<slug:module_slug>/<slug:exercise_slug>/draft/",
        learner.exercise_draft,
        name="exercise_draft",
    ),
    path("submissions/<int:submission_id>/", learner.submission_page, name="submission"),
    path(
        "submissions/<int:submission_id>/status/",
        learner.submission_status,
        name="submission_status",
    ),
    path("submissions/<int:submission_id>/compare/", compare.compare_attempts, name="compare"),
    path("join/", enrolment.join_code, name="join_code"),
    path("join/<str:code>/", enrolment.join, name="join"),
    path("teach/<slug:module_slug>/", instructor.teach_module, name="teach_module"),
    path(
        "teach/<slug:module_slug>/enrolment-links/",
        enrolment.link_create,
        name="enrolment_link_create",
    ),
    path(
        "teach/<slug:module_slug>/enrolment-links/<int:link_id>/revoke/",
        enrolment.link_revoke,
        name="enrolment_link_revoke",
    ),
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
        "teach/<slug:module_slug>/exercises/<slug:exercise_slug>/submissions/",
        instructor.exercise_submissions,
        name="exercise_submissions",
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
    *(
        path(f"teach/<slug:module_slug>/exercises/<slug:exercise_slug>/{part}", view, name=name)
        for part, view, name in (
            ("late-policy/", deadlines.late_policy, "late_policy"),
            ("extensions/", deadlines.extension_grant, "extension_grant"),
            (
                "extensions/<int:extension_id>/withdraw/",
                deadlines.extension_withdraw,
                "extension_withdraw",
            ),
        )
    ),
    path("teach/<slug:module_slug>/author/", module.author_module, name="author_module"),
    path(
        "teach/<slug:module_slug>/author/archive/",
        module.module_archive,
        name="author_module_archive",
    ),
    # The module's form actions: two parts after author/, neither an exercise's URL.
    *(
        path(f"teach/<slug:module_slug>/author/{part}", view, name=name)
        for part, view, name in (
            ("exercises/new/", module.create_exercise, "author_create_exercise"),
            ("modules/new/", module.create_module, "author_create_module"),
            ("archive/upload/", module.upload_archive, "author_upload_archive"),
            ("objectives/edit/", module.save_objectives, "author_objectives"),
            ("members/add/", members.add_member, "author_add_member"),
            ("members/roster/", members.upload_roster, "author_roster"),
        )
    ),
    *(
        path(f"teach/<slug:module_slug>/author/<slug:exercise_slug>/{part}", view, name=name)
        for part, view, name in (
            ("", editor.author_exercise, "author_exercise"),
            ("save/", editor.save_draft, "author_save"),
            ("save-toml/", editor.save_toml, "author_save_toml"),
            ("save-validate/", editor.save_and_validate, "author_save_validate"),
            ("schedule/", editor.schedule, "author_schedule"),
            ("validate/", publishing.validate, "author_validate"),
            ("publish/", publishing.publish, "author_publish"),
            ("unpublish/", publishing.unpublish, "author_unpublish"),
            ("preview-statement/", preview.statement_preview, "author_statement_preview"),
            ("validation/", preview.validation_status, "author_validation"),
            ("try/", preview.try_exercise, "author_try"),
            ("diff/", preview.version_diff, "author_diff"),
            ("restore/", history.restore_draft, "author_restore"),
        )
    ),
]
