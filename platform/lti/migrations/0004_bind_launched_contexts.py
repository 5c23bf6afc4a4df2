"""Existing installs: every LMS course (context) that already has a resource link opening
a gradlab exercise is bound to that exercise's module, so a running course keeps working
once launches need a binding. Contexts with no recorded link stay unbound."""

from typing import Any

from django.db import migrations


def bind_launched_contexts(apps: Any, schema_editor: Any) -> None:
    ExerciseLink = apps.get_model("gradlab_lti", "ExerciseLink")
    ContextBinding = apps.get_model("gradlab_lti", "ContextBinding")
    pairs = (
        ExerciseLink.objects.filter(resource_link__context__isnull=False)
        .values_list(
            "resource_link__context__deployment_id",
            "resource_link__context__id_on_platform",
            "exercise__module_id",
        )
        .distinct()
    )
    for deployment_id, context_id, module_id in pairs:
        if context_id:
            ContextBinding.objects.get_or_create(
                deployment_id=deployment_id, context_id=context_id, module_id=module_id,
                defaults={"origin": "migration"},
            )  # fmt: skip


class Migration(migrations.Migration):
    dependencies = [("gradlab_lti", "0003_context_binding")]

    operations = [migrations.RunPython(bind_launched_contexts, migrations.RunPython.noop)]
