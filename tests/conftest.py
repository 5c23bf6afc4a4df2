"""Root of the test suite. Plugins:
- lanes: markers by folder and fixture (`make test-fast` deselects sandbox, docker, browser,
  worker) and the guard that fails a test starting one of those without its marker;
- gradlab_fixtures: the shared fixtures (catalog, personas, a real Celery worker);
- browser_fixtures: Chromium (the session's Playwright browser, pages, screenshots);
- db_template: each test database cloned from a migrated template, not migrated again.
"""

pytest_plugins = ["pytester", "lanes", "gradlab_fixtures", "browser_fixtures", "db_template"]
