"""Heartbeats: when a piece of periodic work last finished (the recovery sweep)."""

from __future__ import annotations

from django.db import models


class Heartbeat(models.Model):
    name = models.CharField(max_length=64, primary_key=True)
    at = models.DateTimeField()
    detail = models.CharField(max_length=200, blank=True, default="")  # e.g. a broker's run id

    def __str__(self) -> str:
        return f"{self.name} at {self.at.isoformat()}"
