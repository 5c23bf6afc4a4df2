"""50 concurrent submissions from one learner against a live server (real threads, real
PostgreSQL): the quota holds exactly (it is enforced in the database, one learner's
submissions created one at a time), and every refusal is a 429 with Retry-After."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

pytestmark = pytest.mark.django_db(transaction=True)

CONCURRENT = 50
QUOTA = 5


@pytest.mark.heavy  # 50 threads, each its own connection
def test_fifty_concurrent_submissions_from_one_learner_respect_the_quota_exactly(
    live_server: Any, alice_learner: Any, worker_queue: str, settings: Any
) -> None:
    from accounts.services import token_issue
    from submissions.models import Submission

    settings.GRADLAB_RATE_LIMIT_COUNT = QUOTA
    headers = {"Authorization": f"Token {token_issue(user=alice_learner)}"}

    def submit(index: int) -> requests.Response:
        return requests.post(f"{live_server.url}/api/v1/submissions/", headers=headers,
                             json={"exercise": "chain-rule", "code": f"x = {index}"},
                             timeout=120)  # fmt: skip

    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        responses = list(pool.map(submit, range(CONCURRENT)))

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] * QUOTA + [429] * (CONCURRENT - QUOTA)
    refused = [response for response in responses if response.status_code == 429]
    assert all(int(response.headers["Retry-After"]) >= 1 for response in refused)
    assert all("Traceback" not in response.text for response in responses)
    assert Submission.objects.filter(learner=alice_learner).count() == QUOTA
