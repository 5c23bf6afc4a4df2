from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    verbose_name = "Integrations: course API tokens, idempotency keys, webhooks"

    def ready(self) -> None:
        # Registers the OpenAPI description of the Bearer scheme with drf-spectacular.
        from integrations import schema  # noqa: F401
