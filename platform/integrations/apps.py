from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    name = "integrations"
    verbose_name = "Integrations: course API tokens, idempotency keys, webhooks"

    def ready(self) -> None:
        # Imported once the apps are loaded (models): the OpenAPI description of the Bearer
        # scheme registers with drf-spectacular, the webhooks receive graded submissions.
        from integrations import events, schema  # noqa: F401
        from submissions.signals import graded

        graded.connect(events.submission_graded, dispatch_uid="integrations.events")
