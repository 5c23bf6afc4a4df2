"""Input and output shapes of the course endpoints (/api/v1/courses/{module}/...)."""

from __future__ import annotations

from rest_framework import serializers

from accounts.models import Enrollment
from integrations.tokens import SCOPES


class CourseTokenCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=sorted(SCOPES)))
    expires_at = serializers.DateTimeField(required=False, allow_null=True)


class CourseTokenOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the token's first characters, to recognise it")
    scopes = serializers.ListField(child=serializers.CharField())
    created_by = serializers.CharField(source="created_by.username")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)


class CourseTokenCreatedOutput(CourseTokenOutput):
    token = serializers.CharField(help_text="shown only in this response: store it now")


class WebhookCreateInput(serializers.Serializer):
    url = serializers.CharField(max_length=2000)
    events = serializers.ListField(child=serializers.CharField(), required=False)


class WebhookUpdateInput(serializers.Serializer):
    active = serializers.BooleanField()


class WebhookOutput(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    active = serializers.BooleanField()
    disabled_reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class WebhookSecretOutput(WebhookOutput):
    secret = serializers.CharField(help_text="whsec_...: verify webhook-signature with it")
    previous_secret_expires_at = serializers.DateTimeField(
        allow_null=True,
        help_text="after a rotation: until then the replaced secret signs too",
    )


class WebhookDeliveryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    message_id = serializers.CharField(help_text="the webhook-id header")
    event_type = serializers.CharField()
    status = serializers.CharField(help_text="pending, sending, delivered or failed")
    attempts = serializers.IntegerField()
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    delivered_at = serializers.DateTimeField(allow_null=True)
    payload = serializers.JSONField()


class MemberInput(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Enrollment.Role.values)
    email = serializers.EmailField(
        required=False, default="", help_text="a created user's email (ignored otherwise)"
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields: dict[str, serializers.Field] = super().get_fields()
        # Declared here: a class attribute `create` would hide Serializer.create.
        fields["create"] = serializers.BooleanField(
            default=False,
            help_text="create the user if missing (with an unusable password: they sign in "
            "through LTI, or an administrator sets one); otherwise a missing user is a 400",
        )
        return fields


class MemberOutput(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=Enrollment.Role.values)
    enrolled_at = serializers.DateTimeField(source="created_at")


class RosterImportOutput(serializers.Serializer):
    added = serializers.IntegerField(help_text="rows that made a new member")
    changed = serializers.IntegerField(help_text="rows that changed a member's role")
    unchanged = serializers.IntegerField(help_text="rows that were already so")
    created_users = serializers.ListField(
        child=serializers.CharField(), help_text="usernames of the users created (?create=1)"
    )
