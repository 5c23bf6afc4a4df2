"""Hidden starting values: the second run's rewrite of a script's source (FORMAT.md
section 2, "The second run").

The exercise's graded leaves (the `names` that the reference leaves as floating-point
tensors requiring grad, `grader.runs.second.designated_leaves`) are given, in the second
run, starting values drawn from the submission's hidden seed over a continuous range
(`draw_starts`). They are put in place by rewriting the source in the worker, before it
reaches any sandbox (`rewrite`): after every assignment to a designated name (at module
level, in any block or loop there, or in a function that declares the name `global`;
`globals()["x"] = ...` too) one call is appended on the same line (so every line keeps
its number), which, when the name then holds the leaf's plain starting value (a number,
or a floating-point leaf tensor holding exactly those values), replaces that value with
the hidden one (a tensor's data replaced: its identity, dtype, device, shape and
`requires_grad` are kept). A value that is not the plain one (already started, or
updated by training) is left alone, so `x = 2.0` then `x = torch.tensor(x,
requires_grad=True)`, a starter line left above the learner's own, and leaves re-created
from updated values in a loop all work. The reference's solution is rewritten the same
way, at the same values.

A script whose data and model come from a fixed seed (`torch.manual_seed(0)`, then
`torch.randn`, `nn.Linear`) has no leaf of its own to start: the seed is designated
instead (`SEED`, `plain_seed`). Its hidden value is an integer drawn from the
submission's seed, and the call appended after every statement that calls `manual_seed`
(anywhere in the source: torch's generator is global) reseeds torch with it when torch's
seed is then the plain one, so the data and the model's initial parameters are unknown
before the run.

Nothing here trusts the learner's process: the values are literals of the source it
receives, unknown before it runs. Code that undoes the call keeps the plain values and is
compared with the reference at the hidden ones; code that reads the value (or the call's
arguments) at run time knows the inputs, not the answer, and must compute it.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from grader.spec import DataLine

STARTER = "__gradlab_start__"
# A data line's start counts, in this global of the learner's module, the times it moved
# the targets (captured in the second run: a line never moved makes its checks claims).
LINE_FLAG = "__gradlab_line__"
# The targets are moved when the least-squares line through (inputs, targets) is the plain
# one within this share of max(1, |slope|) and of max(1, |intercept|); a hidden line is at
# least twice as far (LINE_SHRINK), so moved targets are never moved again.
LINE_FIT = 0.05
LINE_SHRINK = (0.125, 0.75)  # on the grid: drawn lines are exact in float32
# Defined once in the module's globals by the first call that runs (exec'd from a literal,
# so no line of the learner's file moves); a fixed text, never built from job data.
PRELUDE = (
    "def __gradlab_start__(name, plain, hidden, inputs=()):\n"
    "    import torch\n"
    "    if name == 'torch.manual_seed':\n"
    "        if torch.initial_seed() == int(plain[0]):\n"
    "            torch.manual_seed(int(hidden[0]))\n"
    "        return\n"
    "    space = globals()\n"
    "    value = space.get(name)\n"
    "    if inputs:\n"
    "        if not isinstance(value, torch.Tensor) or not value.is_floating_point():\n"
    "            return\n"
    "        if value.requires_grad or value.numel() < 2:\n"
    "            return\n"
    "        with torch.no_grad():\n"
    "            targets = value.detach().reshape(-1).double().cpu()\n"
    "            for source in inputs:\n"
    "                points = space.get(source)\n"
    "                if not isinstance(points, torch.Tensor) or points is value:\n"
    "                    continue\n"
    "                if points.is_complex() or points.dtype == torch.bool:\n"
    "                    continue\n"
    "                if points.numel() != value.numel():\n"
    "                    continue\n"
    "                flat = points.detach().reshape(-1).double().cpu()\n"
    "                centred = flat - flat.mean()\n"
    "                spread = float((centred * centred).sum())\n"
    "                if not spread > 0.0:\n"
    "                    continue\n"
    "                slope = float((centred * (targets - targets.mean())).sum()) / spread\n"
    "                intercept = float(targets.mean()) - slope * float(flat.mean())\n"
    "                fitted = (slope, intercept)\n"
    f"                if not all(abs(f - p) <= {LINE_FIT} * max(1.0, abs(p))\n"
    "                           for f, p in zip(fitted, plain)):\n"
    "                    continue\n"
    "                inputs_here = points.detach().reshape(value.shape)\n"
    "                inputs_here = inputs_here.to(device=value.device, dtype=value.dtype)\n"
    "                shift = (hidden[0] - plain[0]) * inputs_here + (hidden[1] - plain[1])\n"
    "                value.data = value.detach() + shift\n"
    f"                count = space.get({LINE_FLAG!r})\n"
    f"                space[{LINE_FLAG!r}] = (count if type(count) is int else 0) + 1\n"
    "                return\n"
    "        return\n"
    "    if isinstance(value, (int, float)) and not isinstance(value, bool):\n"
    "        if len(plain) == 1 and float(value) == plain[0]:\n"
    "            space[name] = hidden[0]\n"
    "        return\n"
    "    if not isinstance(value, torch.Tensor) or not value.is_floating_point():\n"
    "        return\n"
    "    if not value.is_leaf or value.numel() != len(plain):\n"
    "        return\n"
    "    with torch.no_grad():\n"
    "        same = torch.tensor(plain, dtype=value.dtype).reshape(value.shape)\n"
    "        if not torch.equal(value.detach().cpu(), same):\n"
    "            return\n"
    "        moved = torch.tensor(hidden, dtype=value.dtype, device=value.device)\n"
    "        value.data = moved.reshape(value.shape)\n"
)
GRID = 65_536  # drawn values are multiples of 1/GRID: exact in float32 for small leaves
SCALES = (1.25, 2.0)  # a start is plain * scale + offset, away from zero
OFFSETS = (0.25, 1.0)
MAX_SOURCE_CHARS = 1_000_000  # longer sources are not rewritten (the fallback)
# The designated name of torch's global seed: not an identifier, so never a variable's.
SEED = "torch.manual_seed"
SEEDS = (1, 2**31)  # a hidden seed: an integer in [1, 2**31), never the plain one


@dataclass(frozen=True)
class Start:
    """One designated leaf: its name, its plain starting values (flat, as the reference
    writes them) and the hidden ones of this job. A data line (`inputs` set): `name` is
    the targets, `plain` and `hidden` are (slope, intercept), `inputs` the names the
    targets may have been made from (the exercise's; the rewrite adds those of each
    assignment)."""

    name: str
    plain: tuple[float, ...]
    hidden: tuple[float, ...]
    inputs: tuple[str, ...] = ()

    @property
    def is_line(self) -> bool:
        return bool(self.inputs)


def draw_starts(
    leaves: Mapping[str, Sequence[float]], seed: int, line: DataLine | None = None
) -> tuple[Start, ...]:
    """Each leaf's hidden values, from the seed and the leaf's name: `plain * scale +
    offset` away from zero (a positive value stays positive, a zero moves, no value is
    its own start), scale in [1.25, 2) and offset in [0.25, 1) on a grid of 1/65536
    (over 2 * 10**9 pairs per leaf), drawn per job; and the data line's (`line_start`),
    unless its targets are a leaf's name."""
    starts = []
    for name in sorted(leaves):
        if name == SEED:
            starts.append(_seed_start(leaves[name], seed))
            continue
        scale = _uniform(seed, name, "scale", SCALES)
        offset = _uniform(seed, name, "offset", OFFSETS)
        plain = tuple(float(v) for v in leaves[name])
        hidden = tuple(v * scale + (offset if v >= 0 else -offset) for v in plain)
        starts.append(Start(name, plain, hidden))
    if line is not None and line.target not in leaves:
        starts.append(line_start(line, seed))
    return tuple(sorted(starts, key=lambda start: start.name))


def line_start(line: DataLine, seed: int) -> Start:
    """The data line of this job: its slope and intercept each moved toward zero (below
    it, for a zero) by `max(1, |plain|) * u`, u in LINE_SHRINK drawn from the seed on the
    grid: y = 2x + 1 becomes y = a x + c with a in (0.5, 1.75] and c in (0.25, 0.875]. A line
    no larger than the plain one: a loop whose learning rate and step count fit the plain
    line fits it as well (the parameters have no farther to go from the usual starts), and
    the moved line is never within LINE_FIT of the plain one."""
    plain = (line.slope, line.intercept)
    hidden = tuple(
        value
        - math.copysign(
            max(1.0, abs(value)) * _uniform(seed, line.target, part, LINE_SHRINK), value
        )
        for value, part in zip(plain, ("slope", "intercept"), strict=True)
    )
    return Start(line.target, plain, hidden, (line.input,))


def _seed_start(plain: Sequence[float], seed: int) -> Start:
    """torch's seed: an integer drawn from the job's seed in SEEDS (over 2 * 10**9
    values), never the plain one."""
    digest = hashlib.sha256(f"{seed}\0{SEED}".encode()).digest()
    low, high = SEEDS
    hidden = low + int.from_bytes(digest[:8], "big") % (high - low)
    if hidden == int(plain[0]):
        hidden = low + (hidden - low + 1) % (high - low)
    return Start(SEED, (float(plain[0]),), (float(hidden),))


def _uniform(seed: int, name: str, part: str, bounds: tuple[float, float]) -> float:
    digest = hashlib.sha256(f"{seed}\0{name}\0{part}".encode()).digest()
    steps = int((bounds[1] - bounds[0]) * GRID)
    return bounds[0] + (int.from_bytes(digest[:8], "big") % steps) / GRID


def captured_names(names: Sequence[str], starts: Sequence[Start]) -> tuple[str, ...]:
    """The names a run at `starts` captures: the exercise's, and LINE_FLAG where a data
    line is among them (how often its targets were moved)."""
    flag = (LINE_FLAG,) if any(start.is_line for start in starts) else ()
    return (*names, *flag)


def line_moved(variables: Mapping[str, object]) -> bool:
    """Did the run's code move its data line's targets (LINE_FLAG captured as a positive
    count)? What the learner's code says here only ever makes its checks claims."""
    flag = variables.get(LINE_FLAG)
    value = getattr(flag, "value", None)
    return getattr(flag, "kind", "") == "number" and isinstance(value, int) and value > 0


def starts_key(starts: Sequence[Start]) -> str:
    """The reference cache's runtime words for a run at these starting values."""
    text = repr(
        [(s.name, s.plain, s.hidden, s.inputs) for s in sorted(starts, key=lambda s: s.name)]
    )
    return f"starts-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def plain_starts(source: str, names: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """The plain starting values the reference's source writes for `names`: at the
    first assignment to each, the first literal of a `tensor(...)` / `as_tensor(...)`
    (or the fill value of `full(...)`), or a literal assigned as it is. A name without one
    is not designated (its points rest on the second run's scaled gradients alone)."""
    tree = _parse(source)
    if tree is None:
        return {}
    found: dict[str, tuple[float, ...]] = {}
    for name, node in _first_assignments(tree, set(names)):
        values = _literal_start(node.value) if node.value is not None else None
        if values is not None:
            found[name] = values
    return found


def plain_seed(source: str) -> tuple[float, ...] | None:
    """The seed the reference's source gives torch (the integer literal of its first
    `manual_seed(...)` statement), or None: then the seed is not designated."""
    tree = _parse(source)
    sites = _seed_sites(tree) if tree is not None else []
    if not sites:
        return None
    call = sites[0].value
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords:
        return None
    value = _numbers(call.args[0])
    if value is None or len(value) != 1 or not value[0].is_integer():
        return None
    return value


def _seed_sites(tree: ast.Module) -> list[ast.Expr | ast.Assign | ast.AnnAssign]:
    """The statements that are a `manual_seed(...)` call (`torch.manual_seed(0)`,
    `g = torch.manual_seed(0)`), anywhere in the source (torch's generator is global), in
    source order."""
    sites = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Call)
        and _called(node.value.func) == "manual_seed"
    ]
    return sorted(sites, key=lambda node: (node.lineno, node.col_offset))


def made_leaves(source: str) -> list[str]:
    """The global names whose first assignment in `source` makes a leaf that requires
    grad: a call with `requires_grad=True`, `.requires_grad_()` or `Parameter(...)`
    (the reference's leaves, also those the manifest does not capture)."""
    tree = _parse(source)
    if tree is None:
        return []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return [
        name
        for name, node in _first_assignments(tree, names)
        if node.value is not None and _makes_leaf(node.value)
    ]


def _first_assignments(tree: ast.Module, names: set[str]) -> Iterator[tuple[str, Assignment]]:
    seen: set[str] = set()
    for name, node in _assignments(tree, names):
        if name not in seen:
            seen.add(name)
            yield name, node


def _makes_leaf(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        if _called(node.func) in ("requires_grad_", "Parameter"):
            return True
        for keyword in node.keywords:
            flag = keyword.value
            if keyword.arg == "requires_grad" and isinstance(flag, ast.Constant) and flag.value:
                return True
    return False


def _literal_start(value: ast.expr) -> tuple[float, ...] | None:
    direct = _numbers(value)
    if direct is not None:
        return direct
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        called = _called(node.func)
        if called in ("tensor", "as_tensor") and node.args:
            return _numbers(node.args[0])
        if called == "full" and len(node.args) >= 2:
            return _numbers(node.args[1])
    return None


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _numbers(node: ast.expr) -> tuple[float, ...] | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    flat: list[float] = []
    if not _flatten(value, flat) or not flat:
        return None
    return tuple(flat)


def _flatten(value: object, into: list[float]) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        into.append(float(value))
        return True
    if isinstance(value, list | tuple):
        return all(_flatten(item, into) for item in value)
    return False


@dataclass(frozen=True)
class Rewritten:
    """The rewritten source and the designated names it starts (those with at least one
    assignment the rewrite found); `missing`: the names it could not start."""

    source: str
    started: tuple[str, ...]
    missing: tuple[str, ...]


def rewrite(source: str, starts: Sequence[Start]) -> Rewritten:
    """`source` with a start call after every assignment to a designated name (module
    docstring) and, for a data line, after every assignment that binds a global, whatever
    its name (the learner names its targets: `y`, `ys`, `target`). A source that does not
    parse (or is too long, or whose rewrite would not parse) is returned as it is, with
    every name missing: the run then moves nothing."""
    wanted = {start.name: start for start in starts}
    untouched = Rewritten(source, (), tuple(sorted(wanted)))
    tree = _parse(source) if wanted else None
    if tree is None:
        return untouched
    line = next((start for start in starts if start.is_line), None)
    names = set(wanted) if line is None else set(wanted) | _all_names(tree)
    sites: dict[tuple[int, int], dict[str, ast.stmt]] = {}
    found: list[tuple[str, ast.stmt]] = list(_assignments(tree, names))
    if SEED in wanted:
        found += [(SEED, node) for node in _seed_sites(tree)]
    for name, node in found:
        assert node.end_lineno is not None and node.end_col_offset is not None
        sites.setdefault((node.end_lineno, node.end_col_offset), {}).setdefault(name, node)
    lines = _lines(source)
    started: set[str] = set()
    for (row, column), named in sorted(sites.items(), reverse=True):
        calls = [_site_calls(name, node, wanted, line) for name, node in named.items()]
        if not any(calls):
            continue
        started |= {start.name for made in calls for start, _ in made}
        text = f"; {DEFINE}" + "".join(f"; {call}" for made in calls for _, call in made)
        raw = lines[row - 1].encode("utf-8")
        lines[row - 1] = (raw[:column] + text.encode() + raw[column:]).decode("utf-8")
    text = "".join(lines)
    if _parse(text) is None:
        return untouched
    return Rewritten(text, tuple(sorted(started)), tuple(sorted(set(wanted) - started)))


DEFINE = f"exec({PRELUDE!r}, globals()) if {STARTER!r} not in globals() else None"


def _site_calls(
    name: str, site: ast.stmt, wanted: Mapping[str, Start], line: Start | None
) -> list[tuple[Start, str]]:
    """The start calls after one assignment of `name` (or seed statement): the leaf's or
    the seed's where it is designated, the data line's after any global's."""
    calls = []
    own = wanted.get(name)
    if own is not None and not own.is_line:
        calls.append((own, _call(own, name)))
    if line is not None and name != SEED:
        calls.append((line, _call(line, name, _line_inputs(line, name, site))))
    return calls


def _call(start: Start, name: str, inputs: Sequence[str] = ()) -> str:
    arguments = f"{name!r}, {list(start.plain)!r}, {list(start.hidden)!r}"
    if inputs:
        arguments += f", {list(inputs)!r}"
    return f"{STARTER}({arguments})"


def _all_names(tree: ast.Module) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _line_inputs(start: Start, name: str, site: ast.stmt) -> tuple[str, ...]:
    """Where the value assigned to `name` here may have been made from: the names its
    value reads (`ys = 2 * xs + 1`: xs), then the exercise's inputs (`target =
    torch.tensor([3.0, 5.0])` beside an `x`). The start moves the value only when the
    least-squares line through one of them and the value is the plain line."""
    value = getattr(site, "value", None)
    read = [
        node.id
        for node in (ast.walk(value) if value is not None else ())
        if isinstance(node, ast.Name) and node.id != name
    ]
    return tuple(dict.fromkeys([*read, *start.inputs]))


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _lines(source: str) -> list[str]:
    """The source's lines as the tokenizer counts them (only \\r\\n, \\r and \\n end one)."""
    lines, start = [], 0
    for match in _NEWLINE.finditer(source):
        lines.append(source[start : match.end()])
        start = match.end()
    lines.append(source[start:])
    return lines


def _parse(source: str) -> ast.Module | None:
    if len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        return ast.parse(source, "submission.py")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


Assignment = ast.Assign | ast.AnnAssign


def _assignments(tree: ast.Module, names: set[str]) -> Iterator[tuple[str, Assignment]]:
    """(name, statement) for each assignment to one of `names` that binds the module's
    global, in source order."""
    yield from _in_block(tree.body, names, names)


def _in_block(
    body: Sequence[ast.stmt], names: set[str], bound: set[str]
) -> Iterator[tuple[str, Assignment]]:
    """`bound`: the names an assignment in this block binds globally (all at module
    level; in a function, those it declares `global`)."""
    for statement in body:
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if isinstance(statement, ast.AnnAssign) and statement.value is None:
                continue
            for target in targets:
                for name in _target_names(target, bound, names):
                    yield name, statement
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            declared = {n for node in _own_nodes(statement) if isinstance(node, ast.Global)
                        for n in node.names}  # fmt: skip
            yield from _in_block(statement.body, names, declared & names)
        elif isinstance(statement, ast.ClassDef):
            continue
        else:
            for block in _blocks(statement):
                yield from _in_block(block, names, bound)


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, not of the functions or classes nested in it."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(statement, "handlers", ()):
        yield handler.body
    for case in getattr(statement, "cases", ()):
        yield case.body


def _target_names(target: ast.expr, bound: set[str], names: set[str]) -> Iterator[str]:
    if isinstance(target, ast.Name):
        if target.id in bound:
            yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_names(element, bound, names)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value, bound, names)
    elif isinstance(target, ast.Subscript) and _is_globals_call(target.value):
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value in names:
            yield key.value


def _is_globals_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "globals"
        and not node.args
    )
