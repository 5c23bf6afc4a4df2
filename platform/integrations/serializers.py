"""Input and output shapes of the course endpoints (/api/v1/courses/{module}/...)."""

from __future__ import annotations

from rest_framework import serializers

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
