from django.apps import AppConfig


class GradingConfig(AppConfig):
    """The bridge to grader/: the sandbox backend, the reference cache, parsed packages."""

    name = "grading"
    verbose_name = "Grading: the bridge to the grader"
