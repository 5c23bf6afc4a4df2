"""The OpenAPI schema (/api/v1/schema/) fuzzed with schemathesis against a live server,
as a signed-in learner and as the module's instructor (whose requests name the real
module, so the course endpoints answer more than 404): for every operation, generated
requests never get a 500, and every response (status, content type, body) is one the
schema declares. Bounded: MAX_EXAMPLES requests per operation and persona (a third in the
fast lane: lanes.examples), derandomized (the same cases each run)."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from gradlab_fixtures import MODULE_SLUG
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from lanes import examples
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

# heavy: it fuzzes every endpoint of the schema
pytestmark = [pytest.mark.heavy, pytest.mark.django_db(transaction=True)]

MAX_EXAMPLES = 6
# Random cases only: the coverage phase (boundary values of every parameter, unexpected
# methods) would double the run, past the minute this test may take in make test.
FUZZING_ONLY = SchemathesisConfig.from_dict({"phases": {"coverage": {"enabled": False}}})
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]  # fmt: skip


# Archive uploads (authoring) are raw bytes: sent like application/octet-stream.
for _media in ("application/gzip", "application/x-gzip", "application/zip"):
    schemathesis.serializer.alias(_media, "application/octet-stream")


def _schema(url: str, config: SchemathesisConfig) -> Any:
    return schemathesis.openapi.from_url(f"{url}/api/v1/schema/", config=config)


@pytest.fixture(scope="module")
def api_schema(live_server: Any) -> Any:
    """The schema as the live server (one per test process) serves it, fetched and parsed
    once for both personas: it is the same document whoever asks."""
    return _schema(live_server.url, FUZZING_ONLY)


@pytest.fixture
def learner_api_schema(api_schema: Any, worker_queue: str) -> Any:
    """The served schema (no worker consumes `worker_queue`)."""
    return api_schema


@pytest.fixture
def instructor_api_schema(api_schema: Any, worker_queue: str) -> Any:
    return api_schema


def _authorization(user: Any, settings: Any) -> dict[str, str]:
    """The user's token header, set up once per test (not per generated case: token_issue
    gives a user the same token every time, and each `settings.X = ...` stacks one more
    override that every later settings read in the live server walks through)."""
    from accounts.services import token_issue

    settings.GRADLAB_RATE_LIMIT_COUNT = 3  # the fuzzer also meets the 429 of the rate limit
    return {"Authorization": f"Token {token_issue(user=user)}"}


@pytest.fixture
def learner_authorization(alice_learner: Any, settings: Any) -> dict[str, str]:
    return _authorization(alice_learner, settings)


@pytest.fixture
def instructor_authorization(bob_instructor: Any, settings: Any) -> dict[str, str]:
    return _authorization(bob_instructor, settings)


learner_schema = schemathesis.pytest.from_fixture("learner_api_schema")
instructor_schema = schemathesis.pytest.from_fixture("instructor_api_schema")
FUZZ = hypothesis_settings(
    max_examples=examples(MAX_EXAMPLES), deadline=None, derandomize=True, database=None,
    suppress_health_check=list(HealthCheck),
)  # fmt: skip


@learner_schema.parametrize()
@FUZZ
def test_a_learners_generated_requests_get_declared_answers_and_never_a_500(
    case: Any, learner_authorization: dict[str, str]
) -> None:
    response = case.call(headers=dict(learner_authorization))
    case.validate_response(response, checks=CHECKS)


@instructor_schema.parametrize()
@FUZZ
def test_an_instructors_generated_requests_get_declared_answers_and_never_a_500(
    case: Any, instructor_authorization: dict[str, str]
) -> None:
    if "module" in (case.path_parameters or {}):
        case.path_parameters["module"] = MODULE_SLUG  # the course endpoints, past their 404
    response = case.call(headers=dict(instructor_authorization))
    case.validate_response(response, checks=CHECKS)
