from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operations: heartbeats of periodic work, health endpoints, startup checks."""

    name = "ops"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ops import checks  # noqa: F401  (registers the Django system checks)
