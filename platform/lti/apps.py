from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    label = "gradlab_lti"
    verbose_name = "LTI 1.3 tool: launches, keys, grade passback"

    def ready(self) -> None:
        # Imported once the apps are loaded (models): LMS score posts of graded submissions,
        # and again of grades that a due date, the late policy or an extension changed.
        from lti import passback
        from submissions.signals import graded, grades_changed

        graded.connect(passback.submission_graded, dispatch_uid="lti.passback")
        grades_changed.connect(passback.grades_changed, dispatch_uid="lti.passback.grades")
