from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    """Instructors' work on the catalog: drafts, validation and regrade jobs. Its rows
    are the catalog's (courses.models: ExerciseVersion, ExerciseJob); it has no models."""

    name = "authoring"
    verbose_name = "Authoring: drafts, validation and regrade jobs"
