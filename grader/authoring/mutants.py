"""Auto-mutants (`python -m grader mutants exercises/<slug>`): the course's classic mistakes,
made by one `ast.NodeTransformer` per mutation at one site of the reference solution at a
time, each graded through the normal engine and sandbox. A mutant the checks pass
("survived") shows a weak check, unless the manifest declares it equivalent:

    [[equivalent_mutant]]
    name = "flip-sign@12"            # the mutant's name as the table prints it
    reason = "the sign of this term cancels in the squared loss"
"""

from __future__ import annotations

import ast
import copy
import difflib
import tomllib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from grader.cache import ReferenceCache
from grader.capture import Capture, ScalarValue, TensorValue
from grader.engine import DEV_SEED, GradeJob, grade_with_capture
from grader.protocol import ExerciseError, Report
from grader.runs.reference import reference_capture
from grader.runs.second import ScaledReference, scaled_reference
from grader.sandbox.base import Sandbox
from grader.spec import MANIFEST, Package, PackageError

MUTANT_WORKERS = 2  # sandbox runs of one package graded at once

# -- transformers ----------------------------------------------------------------------


def _method(node: ast.AST, *names: str) -> bool:
    """`node` is a call of a method (or attribute function) named one of `names`."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in names
    )


def _statement_call(node: ast.stmt, *names: str) -> bool:
    return isinstance(node, ast.Expr) and _method(node.value, *names)


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _no_grad(item: ast.withitem) -> bool:
    expr = item.context_expr
    return isinstance(expr, ast.Call) and (
        (isinstance(expr.func, ast.Attribute) and expr.func.attr == "no_grad")
        or (isinstance(expr.func, ast.Name) and expr.func.id == "no_grad")
    )


class SiteMutator(ast.NodeTransformer):
    """Mutates the `index`-th site (in walk order) where `mutate` applies; counts all sites.
    Subclasses implement `mutate(node) -> replacement | None` for the node types they
    visit, returning None where the mutation does not apply."""

    name = ""
    summary = ""

    def __init__(self, index: int) -> None:
        self.index = index
        self.sites = 0
        self.line = 0

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        return node if _variant(node) else self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node  # an f-string's expressions only format text: no mistake to make there

    def take(self, node: ast.AST) -> bool:
        """Counts a site; True when it is the one to mutate."""
        chosen = self.sites == self.index
        self.sites += 1
        if chosen:
            self.line = getattr(node, "lineno", 0)
        return chosen

    def site(self, node: ast.AST, replacement: Any) -> Any:
        """Counts a site; returns the replacement when it is the chosen one, else `node`."""
        return replacement if self.take(node) else node


def _variant(node: ast.Assign) -> bool:
    """`_name = ...`: a reference-only variant value (FORMAT.md), not part of the lesson."""
    return all(isinstance(t, ast.Name) and t.id.startswith("_") for t in node.targets)


class DropKeyword(SiteMutator):
    """Removes one keyword argument (`retain_graph`, `create_graph`, `requires_grad`)."""

    keyword = ""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        found = _keyword(node, self.keyword)
        if found is None or (isinstance(found.value, ast.Constant) and not found.value.value):
            return node
        mutant = copy.copy(node)
        mutant.keywords = [k for k in node.keywords if k is not found]
        return self.site(node, mutant)  # type: ignore[no-any-return]


class DropRetainGraph(DropKeyword):
    name, keyword = "drop-retain-graph", "retain_graph"
    summary = "a backward without retain_graph"


class DropCreateGraph(DropKeyword):
    name, keyword = "drop-create-graph", "create_graph"
    summary = "a derivative taken without create_graph"


class DropRequiresGrad(DropKeyword):
    name, keyword = "drop-requires-grad", "requires_grad"
    summary = "a tensor created without requires_grad"

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if _method(node, "requires_grad_"):  # x = t.requires_grad_() -> x = t
            self.generic_visit(node)
            return self.site(node, node.func.value)  # type: ignore[attr-defined,no-any-return]
        return super().visit_Call(node)


class DropStatement(SiteMutator):
    """Replaces one matching expression statement with `pass`."""

    def matches(self, node: ast.stmt) -> bool:
        raise NotImplementedError

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if not self.matches(node):
            return node
        return self.site(node, ast.copy_location(ast.Pass(), node))  # type: ignore[no-any-return]


class DropZeroGrad(DropStatement):
    name, summary = "drop-zero-grad", "the gradients are never cleared"

    def matches(self, node: ast.stmt) -> bool:
        if _statement_call(node, "zero_grad"):
            return True
        if not _statement_call(node, "zero_"):
            return False
        owner = node.value.func.value  # type: ignore[attr-defined]
        return isinstance(owner, ast.Attribute) and owner.attr == "grad"


class DropRetainGrad(DropStatement):
    name, summary = "drop-retain-grad", ".grad of a non-leaf without retain_grad()"

    def matches(self, node: ast.stmt) -> bool:
        return _statement_call(node, "retain_grad")


class BareBackward(SiteMutator):
    """`y.backward(v)` -> `y.backward()`: the upstream gradient dropped."""

    name, summary = "bare-backward", "backward() without its gradient argument"
    keywords = ("gradient", "grad_tensors")

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not _method(node, "backward"):
            return node
        kept = [k for k in node.keywords if k.arg not in self.keywords]
        func = node.func
        own = isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Attribute) and func.value.attr == "autograd"
        )
        args = [] if own else node.args[:1]  # torch.autograd.backward(y, v) keeps y
        if len(args) == len(node.args) and len(kept) == len(node.keywords):
            return node
        mutant = copy.copy(node)
        mutant.args, mutant.keywords = args, kept
        return self.site(node, mutant)  # type: ignore[no-any-return]


class FlipSign(SiteMutator):
    """One `+` <-> `-` (binary or augmented assignment)."""

    name, summary = "flip-sign", "a sign flipped in the loss or the update"
    swap: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add}

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if type(node.op) not in self.swap or _is_text(node):
            return node
        mutant = copy.copy(node)
        mutant.op = self.swap[type(node.op)]()
        return self.site(node, mutant)  # type: ignore[no-any-return]

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        if type(node.op) not in self.swap:
            return node
        mutant = copy.copy(node)
        mutant.op = self.swap[type(node.op)]()
        return self.site(node, mutant)  # type: ignore[no-any-return]


def _is_text(node: ast.BinOp) -> bool:
    """An operation on string literals or f-strings (text, not a loss)."""
    return any(
        isinstance(side, ast.JoinedStr)
        or (isinstance(side, ast.Constant) and isinstance(side.value, str))
        for side in (node.left, node.right)
    )


class DetachMidGraph(SiteMutator):
    """`y = <arithmetic>` -> `y = (<arithmetic>).detach()`: the graph cut mid-way."""

    name, summary = "detach-mid-graph", ".detach() on an intermediate result"

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if _variant(node) or not isinstance(node.value, ast.BinOp) or _is_text(node.value):
            return node
        call = ast.Call(
            func=ast.Attribute(value=node.value, attr="detach", ctx=ast.Load()),
            args=[],
            keywords=[],
        )
        mutant = copy.copy(node)
        mutant.value = call
        return self.site(node, mutant)  # type: ignore[no-any-return]


class ItemMidGraph(SiteMutator):
    """`y = <arithmetic>` -> `y = torch.as_tensor((<arithmetic>).tolist())`: the values
    taken out of the graph as Python numbers (`.item()` for a scalar) and re-wrapped."""

    name, summary = "item-mid-graph", ".item()/.tolist() on an intermediate result"

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if _variant(node) or not isinstance(node.value, ast.BinOp) or _is_text(node.value):
            return node
        numbers = ast.Call(
            func=ast.Attribute(value=node.value, attr="tolist", ctx=ast.Load()),
            args=[],
            keywords=[],
        )
        torch = ast.Call(
            func=ast.Name("__import__", ast.Load()), args=[ast.Constant("torch")], keywords=[]
        )
        wrap = ast.Attribute(value=torch, attr="as_tensor", ctx=ast.Load())
        mutant = copy.copy(node)
        mutant.value = ast.Call(func=wrap, args=[numbers], keywords=[])
        return self.site(node, mutant)  # type: ignore[no-any-return]


class MeanSumSwap(SiteMutator):
    name, summary = "mean-sum-swap", "sum where the mean belongs, or the other way round"
    swap = {"mean": "sum", "sum": "mean"}

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr not in self.swap:
            return node
        mutant = copy.copy(node)
        mutant.attr = self.swap[node.attr]
        return self.site(node, mutant)  # type: ignore[no-any-return]


class DropDivision(SiteMutator):
    """`a / b` -> `a` (and `a /= b` removed): the micro-batch loss left unscaled."""

    name, summary = "drop-division", "a loss or gradient left unscaled (division dropped)"

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Div) or _is_text(node):
            return node
        return self.site(node, node.left)  # type: ignore[no-any-return]

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if not isinstance(node.op, ast.Div):
            return node
        return self.site(node, ast.copy_location(ast.Pass(), node))  # type: ignore[no-any-return]


class UpdateOutsideNoGrad(SiteMutator):
    """`with torch.no_grad(): body` -> `body` (an `if True:` keeps the indentation)."""

    name, summary = "update-outside-no-grad", "the update made outside torch.no_grad()"

    def visit_With(self, node: ast.With) -> ast.AST:
        self.generic_visit(node)
        if not any(_no_grad(item) for item in node.items):
            return node
        replacement = ast.If(test=ast.Constant(True), body=node.body, orelse=[])
        return self.site(node, ast.copy_location(replacement, node))  # type: ignore[no-any-return]


class BlockMutator(SiteMutator):
    """Mutates statement lists (module, function, loop and branch bodies)."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            if field == "body" and isinstance(node, ast.Try | ast.TryStar):
                continue  # a backward in `try` is one the reference expects to fail
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, self.block(block))
        return super().generic_visit(node)

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        raise NotImplementedError


class StepBeforeBackward(BlockMutator):
    """`loss.backward(); opt.step()` -> `opt.step(); loss.backward()` in one block."""

    name, summary = "step-before-backward", "the optimizer step taken before backward()"

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        for i, statement in enumerate(statements):
            if not _statement_call(statement, "backward"):
                continue
            later = [
                j for j in range(i + 1, len(statements)) if _statement_call(statements[j], "step")
            ]
            if later and self.take(statement):
                j = later[0]
                return [*statements[:i], statements[j], *statements[i:j], *statements[j + 1 :]]
        return statements


class ExtraBackward(BlockMutator):
    """A backward statement run twice."""

    name, summary = "extra-backward", "one backward() too many"

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        result: list[ast.stmt] = []
        for statement in statements:
            result.append(statement)
            if _statement_call(statement, "backward") and self.take(statement):
                result.append(copy.deepcopy(statement))
        return result


class HandWrittenGrad(BlockMutator):
    """The last backward made a throw-away (`(root).sum().mul(0).backward()`), followed by
    the reference's final `.grad` values written by hand."""

    name, summary = "hand-written-grad", "a throw-away backward, then .grad written by hand"

    def __init__(self, index: int, grads: dict[str, TensorValue] | None = None) -> None:
        super().__init__(index)
        self.grads = grads or {}

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        if not self.grads:
            return statements
        result: list[ast.stmt] = []
        for statement in statements:
            own = _statement_call(statement, "backward") and _own_backward(statement)
            if own and self.take(statement):
                result.extend(self.replacement(statement))
            else:
                result.append(statement)
        return result

    def replacement(self, statement: ast.stmt) -> list[ast.stmt]:
        call: ast.Call = statement.value  # type: ignore[attr-defined]
        root = call.func.value  # type: ignore[attr-defined]
        kept = ", ".join(ast.unparse(k) for k in call.keywords if k.arg == "retain_graph")
        throwaway = f"({ast.unparse(root)}).sum().mul(0).backward({kept})"
        lines = [throwaway, "import torch as _t"]
        for name, value in self.grads.items():
            data = list(value.data) if value.shape else value.data[0]
            shape = list(value.shape)
            lines.append(
                f"{name}.grad = _t.tensor({data!r}, dtype=_t.{value.dtype}).reshape({shape})"
            )
        return [ast.copy_location(s, statement) for s in ast.parse("\n".join(lines)).body]


class TypedInValue(BlockMutator):
    """A value the reference derives from a gradient (its assignment reads `.grad` or
    calls `autograd.grad`) replaced by the reference's final value, typed in as a
    literal: right at the exercise's fixed inputs, but it no longer follows the
    gradients (the scaled run of grader.engine names it `not-from-autograd`)."""

    name, summary = "typed-in-value", "a value derived from a gradient typed in as a literal"

    def __init__(self, index: int, values: dict[str, str] | None = None) -> None:
        super().__init__(index)
        self.values = values or {}
        self.assigned: dict[str, int] = {}

    def visit_Module(self, node: ast.Module) -> ast.AST:
        self.assigned = _assignment_counts(node)
        return self.generic_visit(node)

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        result: list[ast.stmt] = []
        for statement in statements:
            name = self.target(statement)
            if name is not None and self.take(statement):
                lines = ["import torch as _t", f"{name} = {self.values[name]}"]
                result += [
                    ast.copy_location(s, statement) for s in ast.parse("\n".join(lines)).body
                ]
            else:
                result.append(statement)
        return result

    def target(self, statement: ast.stmt) -> str | None:
        """The name `statement` assigns once in the module from a gradient (`name = ...`,
        `(name,) = ...`), if typed-in text for its value is known."""
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            return None
        target = statement.targets[0]
        if isinstance(target, ast.Tuple | ast.List) and len(target.elts) == 1:
            target = target.elts[0]  # (g,) = torch.autograd.grad(...)
        if not isinstance(target, ast.Name) or target.id not in self.values:
            return None
        if self.assigned.get(target.id) != 1 or not _reads_gradient(statement.value):
            return None
        return target.id


def _assignment_counts(tree: ast.Module) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    counts[name.id] = counts.get(name.id, 0) + 1
    return counts


def _reads_gradient(expr: ast.expr) -> bool:
    """`expr` reads a `.grad` or calls a `grad` function (torch.autograd.grad)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "grad" for node in ast.walk(expr))


def typed_in_values(capture: Capture, names: Sequence[str]) -> dict[str, str]:
    """Python text for the reference's final value of each captured name that a learner
    could type in: a complete tensor (not requiring grad) or a number."""
    found: dict[str, str] = {}
    for name in names:
        value = capture.variables.get(name) if capture.variables else None
        if isinstance(value, TensorValue) and value.complete and not value.requires_grad:
            if value.numel <= TYPED_IN_ELEMENTS and value.device_type == "cpu":
                data = list(value.data) if value.shape else value.data[0]
                found[name] = (
                    f"_t.tensor({data!r}, dtype=_t.{value.dtype}).reshape({list(value.shape)})"
                )
        elif isinstance(value, ScalarValue) and value.kind == "number":
            found[name] = repr(value.value)
    return found


TYPED_IN_ELEMENTS = 100  # a larger value is not one anybody types in


class RebuiltGraph(BlockMutator):
    """`y.backward(retain_graph=True); ...; y.backward()` -> the assignment that made `y`
    run again before the second call: retain_graph is still set, but the second call goes
    through a new graph and reuses nothing retained (`graph-not-reused`)."""

    name, summary = "rebuilt-graph", "the graph built again before a second backward"

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        for i, statement in enumerate(statements):
            root = _retaining_root(statement)
            made = _last_assignment(statements[:i], root) if root else None
            if made is None:
                continue
            later = [j for j in range(i + 1, len(statements)) if _backward_of(statements[j], root)]
            if later and self.take(statements[later[0]]):
                j = later[0]
                return [*statements[:j], copy.deepcopy(made), *statements[j:]]
        return statements


def _retaining_root(statement: ast.stmt) -> str | None:
    """`name.backward(..., retain_graph=<true>)`: the root's name."""
    if not _statement_call(statement, "backward"):
        return None
    call: ast.Call = statement.value  # type: ignore[attr-defined]
    kept = _keyword(call, "retain_graph")
    root = call.func.value  # type: ignore[attr-defined]
    if kept is None or (isinstance(kept.value, ast.Constant) and not kept.value.value):
        return None
    return root.id if isinstance(root, ast.Name) else None


def _backward_of(statement: ast.stmt, root: str | None) -> bool:
    if not _statement_call(statement, "backward"):
        return False
    owner = statement.value.func.value  # type: ignore[attr-defined]
    return isinstance(owner, ast.Name) and owner.id == root


def _last_assignment(statements: list[ast.stmt], name: str | None) -> ast.Assign | None:
    for statement in reversed(statements):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id == name:
                return statement
    return None


class RecreatedLeaf(SiteMutator):
    """`with torch.no_grad(): w -= step` -> `w = (w - step).requires_grad_()` (its grad
    carried over): the same numbers, but `w` is a new leaf after every update instead of
    the tensor updated in place (`leaf-recreated`)."""

    name, summary = "recreated-leaf", "a parameter made anew each step instead of updated in place"

    def visit_With(self, node: ast.With) -> ast.AST:
        if not any(_no_grad(item) for item in node.items):
            return self.generic_visit(node)
        body: list[ast.stmt] = []
        for statement in node.body:
            if _in_place_update(statement) and self.take(statement):
                assert isinstance(statement, ast.AugAssign)
                body.extend(self.replacement(statement))
            else:
                body.append(statement)
        mutant = copy.copy(node)
        mutant.body = body
        return mutant

    def replacement(self, statement: ast.AugAssign) -> list[ast.stmt]:
        assert isinstance(statement.target, ast.Name)  # _in_place_update chose it
        name = statement.target.id
        sign = "-" if isinstance(statement.op, ast.Sub) else "+"
        lines = [
            f"_previous_{name} = {name}",
            f"{name} = ({name} {sign} ({ast.unparse(statement.value)})).requires_grad_()",
            f"{name}.grad = _previous_{name}.grad",
        ]
        return [ast.copy_location(s, statement) for s in ast.parse("\n".join(lines)).body]


def _in_place_update(statement: ast.stmt) -> bool:
    """`name -= ...` or `name += ...` on a plain name (a parameter updated in place)."""
    return (
        isinstance(statement, ast.AugAssign)
        and isinstance(statement.target, ast.Name)
        and isinstance(statement.op, ast.Sub | ast.Add)
    )


def _own_backward(statement: ast.stmt) -> bool:
    func = statement.value.func  # type: ignore[attr-defined]
    return not (isinstance(func.value, ast.Attribute) and func.value.attr == "autograd")


MUTATORS: tuple[type[SiteMutator], ...] = (
    DropZeroGrad,
    DropRetainGraph,
    BareBackward,
    FlipSign,
    DetachMidGraph,
    ItemMidGraph,
    DropRequiresGrad,
    MeanSumSwap,
    DropDivision,
    UpdateOutsideNoGrad,
    StepBeforeBackward,
    ExtraBackward,
    HandWrittenGrad,
    DropRetainGrad,
    DropCreateGraph,
    TypedInValue,
    RebuiltGraph,
    RecreatedLeaf,
)


# -- generation --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    mutation: str
    line: int
    source: str
    summary: str
    ordinal: int = 1  # the n-th site of this mutation on this line

    @property
    def name(self) -> str:
        suffix = f"#{self.ordinal}" if self.ordinal > 1 else ""
        return f"{self.mutation}@{self.line}{suffix}"


def _sites(
    tree: ast.Module, build: Callable[[int], SiteMutator]
) -> Iterator[tuple[SiteMutator, ast.Module]]:
    index = 0
    while True:
        mutator = build(index)
        mutated = mutator.visit(copy.deepcopy(tree))
        if index >= mutator.sites:
            return
        yield mutator, ast.fix_missing_locations(mutated)
        index += 1


def generate(
    source: str,
    grads: dict[str, TensorValue] | None = None,
    values: dict[str, str] | None = None,
) -> list[Mutant]:
    """Every mutant of `source`: each mutation at each site where it applies, skipping
    those that unparse to the unmutated code. `grads`: the reference's final `.grad`s
    (`hand-written-grad`); `values`: typed-in text of its final values (`typed-in-value`)."""
    tree = ast.parse(source)
    original = ast.unparse(tree)
    mutants: list[Mutant] = []
    seen = {original}
    for kind in MUTATORS:

        def build(index: int, kind: type[SiteMutator] = kind) -> SiteMutator:
            if kind is HandWrittenGrad:
                return HandWrittenGrad(index, grads)
            if kind is TypedInValue:
                return TypedInValue(index, values)
            return kind(index)

        for mutator, mutated in _sites(tree, build):
            text = ast.unparse(mutated)
            if text in seen:
                continue
            seen.add(text)
            ordinal = 1 + sum(m.mutation == kind.name and m.line == mutator.line for m in mutants)
            mutants.append(Mutant(kind.name, mutator.line, text + "\n", kind.summary, ordinal))
    return mutants


def reference_grads(capture: Capture, names: Sequence[str]) -> dict[str, TensorValue]:
    """The final `.grad` of every captured leaf tensor the reference left one on."""
    grads: dict[str, TensorValue] = {}
    for name in names:
        value = capture.variables.get(name) if capture.variables else None
        grad = getattr(value, "grad", None)
        if isinstance(value, TensorValue) and isinstance(grad, TensorValue) and value.is_leaf:
            grads[name] = grad
    return grads


# -- declared equivalents ----------------------------------------------------------------


def equivalent_mutants(package: Package) -> dict[str, str]:
    """`[[equivalent_mutant]]` entries of the manifest: name -> reason."""
    where = f"exercises/{package.slug}/{MANIFEST}"
    raw = tomllib.loads(package.files[MANIFEST]).get("equivalent_mutant", [])
    if not isinstance(raw, list):
        raise PackageError(f"{where}: equivalent_mutant: must be an array of tables")
    declared: dict[str, str] = {}
    for index, item in enumerate(raw):
        here = f"{where}: equivalent_mutant[{index}]"
        if not isinstance(item, dict) or set(item) != {"name", "reason"}:
            raise PackageError(f"{here}: needs exactly the fields name and reason")
        name, reason = item["name"], item["reason"]
        if not isinstance(name, str) or not isinstance(reason, str) or not reason.strip():
            raise PackageError(f"{here}: name and reason must be non-empty strings")
        declared[name] = reason
    return declared


# -- grading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class MutantResult:
    mutant: Mutant
    outcome: str  # "caught" | "survived" | "equivalent" | "error"
    detail: str  # the diagnoses, the declared reason, or the failure
    diagnoses: tuple[str, ...] = ()  # caught by checks: each failed check's diagnosis

    @property
    def bad(self) -> bool:
        """Survived undeclared, or could not be graded: package validation fails."""
        return self.outcome in ("survived", "error")


def classify(report: Report, mutant: Mutant, declared: dict[str, str]) -> MutantResult:
    """A mutant is caught when a learner handing it in would not pass: a failing check
    (with its diagnoses) or a failed run (a time limit, a crash of the interpreter)."""
    if report.status != "graded":
        return MutantResult(mutant, "caught", f"failed run: {report.message or report.status}")
    if not report.passed:
        named = tuple(c.diagnosis for c in report.checks if not c.passed)
        found = sorted({diagnosis or "no diagnosis" for diagnosis in named})
        return MutantResult(mutant, "caught", ", ".join(found), named)
    if mutant.name in declared:
        return MutantResult(mutant, "equivalent", declared[mutant.name])
    return MutantResult(mutant, "survived", f"{report.score:g}/{report.max_score:g}")


@dataclass(frozen=True)
class MutantPlan:
    """The mutants of one package, made from its reference capture, and the manifest's
    declared equivalents: what `judge` grades one by one."""

    package: Package
    reference: Capture
    mutants: tuple[Mutant, ...]
    declared: dict[str, str]
    scaled: ScaledReference | None = None  # None: judge() runs the scaled reference itself

    def stale_declarations(self) -> list[str]:
        """Declared equivalents that name no generated mutant (the solution changed)."""
        names = {mutant.name for mutant in self.mutants}
        return sorted(name for name in self.declared if name not in names)


def plan_mutants(
    package: Package, reference: Capture, scaled: ScaledReference | None = None
) -> MutantPlan:
    script = reference.kind == "script"
    names = package.manifest.names
    grads = reference_grads(reference, names) if script else {}
    values = typed_in_values(reference, names) if script else {}
    mutants = tuple(generate(package.solution, grads, values))
    return MutantPlan(package, reference, mutants, equivalent_mutants(package), scaled)


def judge(
    plan: MutantPlan,
    mutant: Mutant,
    *,
    sandbox: Sandbox,
    seed: int,
    device: str,
    cache: ReferenceCache | None = None,
) -> MutantResult:
    """Grades one mutant against the plan's reference capture (never re-run per mutant;
    the second run's limited reference runs come from `cache` where it holds them), up to
    its first run that does not pass: a mutant is caught by any failed run, so the runs
    after it could only add diagnoses (a device pair's second run, the second run).
    A sandbox fault (InfrastructureError) propagates: the caller retries."""
    job = GradeJob(package=plan.package, code=mutant.source, seed=seed, device=device)
    try:
        report, _ = grade_with_capture(
            job, sandbox=sandbox, cache=cache, reference=plan.reference, scaled=plan.scaled,
            until_failed=True,
        )  # fmt: skip
    except ExerciseError as error:
        return MutantResult(mutant, "error", str(error))
    return classify(report, mutant, plan.declared)


def run_mutants(
    package: Package,
    *,
    sandbox: Sandbox,
    cache: ReferenceCache | None = None,
    seed: int = DEV_SEED,
    device: str = "cpu",
    workers: int = MUTANT_WORKERS,
) -> list[MutantResult]:
    """Generates and grades every mutant of the package's reference solution."""
    reference = reference_capture(package, seed=seed, device=device, sandbox=sandbox, cache=cache)
    scaled = scaled_reference(
        package, reference, seed=seed, device=device, sandbox=sandbox, cache=cache
    )
    plan = plan_mutants(package, reference, scaled)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(
            pool.map(
                lambda m: judge(plan, m, sandbox=sandbox, seed=seed, device=device, cache=cache),
                plan.mutants,
            )
        )


def diff(source: str, mutant: Mutant) -> str:
    original = ast.unparse(ast.parse(source)).splitlines()
    lines = difflib.unified_diff(
        original, mutant.source.splitlines(), "solution.py", mutant.name, lineterm="", n=1
    )
    return "\n".join(lines)


def table(slug: str, source: str, results: Sequence[MutantResult]) -> str:
    counts = {k: sum(r.outcome == k for r in results) for k in _OUTCOMES}
    head = f"{slug}: {len(results)} mutants, " + ", ".join(f"{n} {k}" for k, n in counts.items())
    rows = [head, f"  {'mutant':<32} {'line':>4}  result"]
    for r in results:
        rows.append(f"  {r.mutant.name:<32} {r.mutant.line:>4}  {r.outcome} ({r.detail})")
    for r in results:
        if r.outcome == "survived":
            rows.append(f"survivor {r.mutant.name}: {r.mutant.summary}")
            rows.append(diff(source, r.mutant))
    return "\n".join(rows)


_OUTCOMES = ("caught", "survived", "equivalent", "error")
