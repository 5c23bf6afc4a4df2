"""Prometheus metrics of gradlab, read from the database and the broker at each scrape.

The web server runs several processes and the workers run on other hosts: counters kept
in one process's memory would each tell a part of the story. The database and the broker
hold the whole of it, so a custom collector reads them when `/metrics` is scraped:

- `gradlab_submissions{status}`: submissions by status (queued, running, graded, failed);
- `gradlab_submissions_review{review}`: submissions with an integrity review state (held,
  released, rejected): integrity flags raised by the grader;
- `gradlab_grading_duration_seconds{exercise,backend}`: a histogram of claim-to-report
  time of graded submissions, per exercise and sandbox backend (the report's runtime);
- `gradlab_learner_runs_total{exercise,outcome}`: sandbox outcomes of the learners' runs
  (`ok`: a report was built from the run; `failed`: timeout, memory, crash, no result);
- `gradlab_grading_retries_total`: grading attempts beyond the first (infrastructure
  faults, a dead worker's job taken over);
- `gradlab_queue_depth{queue}`: messages waiting in each grading queue of the broker;
- `gradlab_sweep_age_seconds`: seconds since the last recovery sweep (readiness fails
  past three intervals).

Access (views.metrics): a bearer token (`GRADLAB_METRICS_TOKEN`) or a client address in
`GRADLAB_METRICS_ALLOWED_IPS`; with neither configured `/metrics` does not exist (404).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from django.db.models.fields.json import KeyTextTransform
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from ops.heartbeats import SWEEP, heartbeat_age_seconds
from submissions.models import Submission

logger = logging.getLogger(__name__)

# Seconds from claim to report: one grading is a reference run and a learner run.
DURATION_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 180.0)
UNKNOWN = "unknown"


def _backend(runtime: str | None) -> str:
    """The sandbox backend of a report's runtime ("bubblewrap torch-2.6.0 cpu")."""
    return (runtime or "").split(" ", 1)[0] or UNKNOWN


class GradlabCollector(Collector):
    """Reads every metric from the database and the broker at each collect()."""

    def collect(self) -> Iterator[Metric]:
        yield self._by_status()
        yield self._by_review()
        yield self._durations()
        yield self._learner_runs()
        yield self._retries()
        yield self._queue_depth()
        yield self._sweep_age()

    def _by_status(self) -> Metric:
        family = GaugeMetricFamily(
            "gradlab_submissions", "Submissions by status.", labels=["status"]
        )
        counts = dict(Submission.objects.order_by().values_list("status").annotate(n=Count("pk")))
        for status in Submission.Status.values:
            family.add_metric([status], counts.get(status, 0))
        return family

    def _by_review(self) -> Metric:
        family = GaugeMetricFamily(
            "gradlab_submissions_review",
            "Submissions whose report raised integrity flags, by review state.",
            labels=["review"],
        )
        reviewed = Submission.objects.exclude(review="").order_by()
        counts = dict(reviewed.values_list("review").annotate(n=Count("pk")))
        for review in Submission.Review.values:
            if review:
                family.add_metric([review], counts.get(review, 0))
        return family

    def _durations(self) -> Metric:
        family = HistogramMetricFamily(
            "gradlab_grading_duration_seconds",
            "Claim-to-report time of graded submissions.",
            labels=["exercise", "backend"],
        )
        graded = Submission.objects.filter(status="graded", started_at__isnull=False).order_by()
        seconds = ExpressionWrapper(F("graded_at") - F("started_at"), output_field=DurationField())
        buckets = {
            f"le_{index}": Count("pk", filter=Q(took__lte=timedelta(seconds=bound)))
            for index, bound in enumerate(DURATION_BUCKETS)
        }
        rows = (
            graded.annotate(took=seconds, runtime=KeyTextTransform("runtime", "report"))
            .values("exercise__slug", "runtime")
            .annotate(n=Count("pk"), total=Sum("took"), **buckets)
        )
        merged: dict[tuple[str, str], list[float]] = {}
        for row in rows:
            key = (row["exercise__slug"], _backend(row["runtime"]))
            values = [row[f"le_{i}"] for i in range(len(DURATION_BUCKETS))]
            total = row["total"].total_seconds() if row["total"] is not None else 0.0
            found = merged.setdefault(key, [0.0] * (len(DURATION_BUCKETS) + 2))
            for index, value in enumerate([*values, row["n"], total]):
                found[index] += value
        for (exercise, backend), values in sorted(merged.items()):
            count, total = values[-2], values[-1]
            bounds = [
                (floatToGoString(bound), values[i]) for i, bound in enumerate(DURATION_BUCKETS)
            ]
            family.add_metric(
                [exercise, backend], buckets=[*bounds, ("+Inf", count)], sum_value=total
            )
        return family

    def _learner_runs(self) -> Metric:
        family = CounterMetricFamily(
            "gradlab_learner_runs",
            "Learners' sandbox runs that produced a report, by outcome.",
            labels=["exercise", "outcome"],
        )
        outcome = KeyTextTransform("status", "report")
        rows = (
            Submission.objects.filter(status="graded")
            .order_by()
            .annotate(outcome=outcome)
            .values_list("exercise__slug", "outcome")
            .annotate(n=Count("pk"))
        )
        for exercise, status, count in rows:
            family.add_metric([exercise, "ok" if status == "graded" else "failed"], count)
        return family

    def _retries(self) -> Metric:
        total = Submission.objects.filter(attempts__gt=1).aggregate(n=Sum(F("attempts") - 1))["n"]
        return CounterMetricFamily(
            "gradlab_grading_retries",
            "Grading attempts beyond the first (infrastructure faults, dead workers).",
            value=total or 0,
        )

    def _queue_depth(self) -> Metric:
        family = GaugeMetricFamily(
            "gradlab_queue_depth", "Messages waiting in a grading queue.", labels=["queue"]
        )
        queues = {settings.GRADLAB_QUEUE_CPU, settings.GRADLAB_QUEUE_GPU}
        for queue in sorted(queues | {settings.GRADLAB_QUEUE_AUTHORING}):
            depth = queue_depth(queue)
            if depth is not None:
                family.add_metric([queue], depth)
        return family

    def _sweep_age(self) -> Metric:
        age = heartbeat_age_seconds(SWEEP)
        return GaugeMetricFamily(
            "gradlab_sweep_age_seconds",
            "Seconds since the last recovery sweep (NaN: none has run).",
            value=age if age is not None else float("nan"),
        )


def queue_depth(queue: str) -> int | None:
    """Messages waiting in a Redis queue; None when the broker is not Redis or is down."""
    import redis

    url = str(settings.CELERY_BROKER_URL)
    if not url.startswith(("redis://", "rediss://")):
        return None
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2.0, socket_timeout=2.0)
        return int(client.llen(queue))  # type: ignore[arg-type]
    except redis.RedisError:
        logger.warning("metrics: the broker did not answer the depth of %s", queue)
        return None


def exposition() -> bytes:
    """The metrics in Prometheus's text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GradlabCollector())
    return generate_latest(registry)
