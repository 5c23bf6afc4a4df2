"""OpenAPI description of the course-token scheme (imported by IntegrationsConfig.ready)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from integrations.tokens import SCOPES


class CourseTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "integrations.authentication.CourseTokenAuthentication"
    name = "courseToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scopes = "; ".join(f"`{scope}`: {meaning}" for scope, meaning in SCOPES.items())
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "glc_… course token",
            "description": (
                "A course API token created by an instructor (POST "
                "/api/v1/courses/{module}/tokens/), limited to one course and to scopes: "
                f"{scopes}. A wrong token is 401; a wrong course or a missing scope is 403."
            ),
        }
