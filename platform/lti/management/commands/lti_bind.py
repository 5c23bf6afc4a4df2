"""Binds an LMS course (a context id of a registered platform's deployment) to a gradlab
module: launches, roster syncs and deep linking from that course then open that module,
and the LMS course's roles give roles in it. `--unbind` removes the binding; `--list`
prints the bindings."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.core.management.base import BaseCommand, CommandError, CommandParser
from lti_tool.models import LtiDeployment

from courses.models import Module
from lti.bindings import binding_create
from lti.models import ContextBinding


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--list", action="store_true", help="print the bindings")
        parser.add_argument("--registration", help="the registration's uuid (lti_register)")
        parser.add_argument("--deployment", help="deployment id (if it has several)")
        parser.add_argument("--context", help="the LMS course's context id")
        parser.add_argument("--module", help="the gradlab module's slug")
        parser.add_argument("--unbind", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for binding in ContextBinding.objects.select_related(
                "deployment__registration", "module"
            ).order_by("pk"):
                self.stdout.write(_describe(binding))
            return
        missing = [name for name in ("registration", "context", "module") if not options[name]]
        if missing:
            raise CommandError(f"give --{', --'.join(missing)} (or --list)")
        deployment = _deployment(options["registration"], options["deployment"])
        module = Module.objects.filter(slug=options["module"]).first()
        if module is None:
            raise CommandError(f"no module {options['module']!r}")
        if options["unbind"]:
            ContextBinding.objects.filter(
                deployment=deployment, context_id=options["context"], module=module
            ).delete()
            self.stdout.write(f"unbound {options['context']} from {module.slug}")
            return
        binding = binding_create(
            deployment=deployment, context_id=options["context"], module=module,
            origin=ContextBinding.Origin.OPERATOR,
        )  # fmt: skip
        self.stdout.write(f"bound: {_describe(binding)}")


def _deployment(registration: str, deployment_id: str | None) -> LtiDeployment:
    try:
        found = LtiDeployment.objects.filter(registration__uuid=UUID(registration))
    except ValueError:
        raise CommandError(f"{registration!r} is not a registration uuid") from None
    if deployment_id:
        found = found.filter(deployment_id=deployment_id)
    deployments = list(found[:2])
    if len(deployments) != 1:
        which = "no" if not deployments else "more than one"
        raise CommandError(f"{which} deployment matches: give --registration and --deployment")
    return deployments[0]


def _describe(binding: ContextBinding) -> str:
    deployment = binding.deployment
    return (
        f"{deployment.registration.name} ({deployment.registration.uuid}) deployment "
        f"{deployment.deployment_id} context {binding.context_id} -> {binding.module.slug}"
    )
