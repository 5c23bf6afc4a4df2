"""The platform's apps are layers: each imports only itself and the apps before it in APPS.

Every platform/**/*.py counts (management commands, TYPE_CHECKING and function-level
imports included), except migrations. `config` (settings, URLs, the Celery app) comes
last and may import anything.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platform"

APPS = (
    "common",  # errors, jobs, outboxes, logging: no app of ours
    "grading",  # the bridge to grader/
    "accounts",  # users, tokens, Enrollment
    "courses",  # the catalog, its access rules and rosters
    "submissions",  # grading learners' code; tells who listens through its signals
    "authoring",  # drafts, validation and regrade jobs (they regrade submissions)
    "integrations",  # course tokens, idempotency keys, webhooks
    "lti",  # LTI 1.3: launches, grade passback
    "ops",  # health, heartbeats, the periodic sweeps
    "api",  # every /api/v1/ view
    "web",  # the pages
)
ANYTHING = "config"


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each absolute import in `path`, wherever it stands."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _sources() -> list[Path]:
    return [
        path
        for path in sorted(PLATFORM.rglob("*.py"))
        if "migrations" not in path.relative_to(PLATFORM).parts
    ]


def test_every_app_of_platform_has_its_place_in_the_order() -> None:
    apps = {path.name for path in PLATFORM.iterdir() if (path / "apps.py").exists()}
    assert apps <= {*APPS, ANYTHING}, sorted(apps - {*APPS, ANYTHING})
    assert (PLATFORM / ANYTHING).is_dir()


def test_each_app_imports_only_itself_and_the_apps_before_it() -> None:
    rank = {app: index for index, app in enumerate(APPS)}
    ours = {*APPS, ANYTHING}
    wrong: list[str] = []
    for path in _sources():
        app = path.relative_to(PLATFORM).parts[0]
        if app == ANYTHING:
            continue
        assert app in rank, f"{path.relative_to(ROOT)}: {app!r} is not in APPS"
        for line, module in _imports(path):
            target = module.split(".")[0]
            if target in ours and (target == ANYTHING or rank[target] > rank[app]):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {app} imports {module}")
    assert not wrong, "imports against the app order:\n" + "\n".join(wrong)
