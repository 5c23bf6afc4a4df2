"""Registers an LTI platform (issuer + client id, several per issuer are fine) and its
deployment ids, and prints the values to enter in the LMS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from lti_tool.models import LtiDeployment, LtiRegistration

from lti.keys import keys_ensure


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--issuer", required=True, help="the platform's iss")
        parser.add_argument("--client-id", required=True)
        parser.add_argument("--auth-url", required=True, help="OIDC authorization endpoint")
        parser.add_argument("--token-url", required=True, help="OAuth2 token endpoint")
        parser.add_argument("--keyset-url", required=True, help="the platform's JWKS URL")
        parser.add_argument("--audience", default="", help="token audience, if not token-url")
        parser.add_argument("--deployment", action="append", default=[], help="repeatable")
        parser.add_argument("--base-url", default="https://gradlab.example.org")

    def handle(self, *args: Any, **options: Any) -> None:
        keys_ensure()
        registration, _ = LtiRegistration.objects.update_or_create(
            issuer=options["issuer"],
            client_id=options["client_id"],
            defaults={
                "name": options["name"],
                "auth_url": options["auth_url"],
                "token_url": options["token_url"],
                "keyset_url": options["keyset_url"],
                "audience": options["audience"],
                "is_active": True,
            },
        )
        for deployment_id in options["deployment"]:
            LtiDeployment.objects.update_or_create(
                registration=registration,
                deployment_id=deployment_id,
                defaults={"is_active": True},
            )
        base = options["base_url"].rstrip("/")
        self.stdout.write(f"login URL:    {base}/lti/login/{registration.uuid}/")
        self.stdout.write(f"launch URL:   {base}/lti/launch/")
        self.stdout.write(f"JWKS URL:     {base}/lti/jwks.json")
        self.stdout.write(f"registration: {registration.uuid}")
