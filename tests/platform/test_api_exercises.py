"""GET /api/v1/exercises/ and /api/v1/exercises/{slug}/: the public contract."""

from __future__ import annotations

from typing import Any

from gradlab_fixtures import CATALOG_SLUGS, EXERCISES, MODULE_SLUG
from platform_helpers import E2E_SLUG, package_file

from grader.spec import load_package


def test_exercise_list_gives_slug_title_module_kind_points_and_url_in_course_order(
    api: Any, alice_learner: Any
) -> None:
    response = api(alice_learner).get("/api/v1/exercises/")

    assert response.status_code == 200
    body = response.json()
    assert [item["slug"] for item in body] == list(CATALOG_SLUGS)
    first = body[0]
    assert set(first) == {"slug", "title", "module", "kind", "points", "url"}
    assert first["module"] == MODULE_SLUG
    assert first["kind"] == "script"
    assert first["points"] == 10
    assert first["url"] == "http://testserver/api/v1/exercises/first-gradient/"


def test_exercise_detail_adds_statement_sanitised_html_and_starter_code(
    api: Any, alice_learner: Any
) -> None:
    response = api(alice_learner).get(f"/api/v1/exercises/{E2E_SLUG}/")

    assert response.status_code == 200
    body = response.json()
    assert body["slug"] == E2E_SLUG
    # the statement as learners read it: its "What is checked" table made from the manifest
    assert body["statement"] == load_package(EXERCISES / E2E_SLUG).statement
    assert "<!-- checks -->" in package_file(E2E_SLUG, "statement.md")
    assert "<!-- checks -->" not in body["statement"]
    assert "<td>the script runs without an error</td>" in body["statement_html"]
    assert body["starter_code"] == package_file(E2E_SLUG, "starter.py")
    assert body["statement_html"].startswith("<")
    assert "<pre>" in body["statement_html"] or "<p>" in body["statement_html"]
    assert "hidden_seed" not in body and "files" not in body


def test_unknown_exercise_slug_is_a_404_with_a_json_detail(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).get("/api/v1/exercises/no-such-exercise/")

    assert response.status_code == 404
    assert "no-such-exercise" in response.json()["detail"]


def test_anonymous_caller_gets_401_from_the_exercise_list(api: Any, catalog: Any) -> None:
    response = api(None).get("/api/v1/exercises/")

    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")


def test_an_invalid_token_is_rejected_with_401(catalog: Any) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")

    assert client.get("/api/v1/exercises/").status_code == 401


def test_statement_html_strips_scripts_and_event_handlers() -> None:
    from courses.statement import render_statement

    html = render_statement(
        "# Title\n\n<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n"
        "[link](javascript:alert(3))\n\n```python\nx = 1\n```\n"
    )

    assert "<script" not in html and "onerror" not in html and "javascript:" not in html
    assert "<h1>Title</h1>" in html
    assert '<code class="language-python">x = 1' in html


def test_openapi_schema_describes_the_v1_paths(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).get("/api/v1/schema/", HTTP_ACCEPT="application/json")

    assert response.status_code == 200
    paths = response.json()["paths"]
    assert {"/api/v1/exercises/", "/api/v1/exercises/{slug}/", "/api/v1/submissions/",
            "/api/v1/submissions/{id}/"} <= set(paths)  # fmt: skip
    post = paths["/api/v1/submissions/"]["post"]
    assert any(p["name"] == "Idempotency-Key" for p in post["parameters"])


def test_interactive_docs_page_is_served_without_a_cdn(client: Any, catalog: Any) -> None:
    response = client.get("/api/v1/docs/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "swagger-ui" in page
    assert "cdn.jsdelivr.net" not in page
