"""Tamper detection in the runner child (FORMAT.md section 7): what in-process code cannot
prevent, it records.

- `AuditGuard`: a PEP 578 audit hook, installed before the learner's code runs and active
  while it runs (its frame and heap events while the harness runs too, ALWAYS_WATCHED),
  that records attempts to reach the harness: ctypes, per-process `/proc` and `/dev/fd`
  paths, walking objects through `gc`, reaching a harness frame (`sys._getframe`, a
  traceback's or generator's frame), trace/profile hooks, a second audit hook, new
  sockets (the way to the protocol descriptor), and attribute changes on protected
  objects (torch's autograd classes, the harness's own classes).
- `Snapshot`: the identities of the functions and attributes the harness relies on
  (builtins, torch.autograd and its engine entry, torch.Tensor's attributes, json, the
  harness's modules, and each function's code object), taken before the learner's code
  and compared after it: anything replaced is reported by name.

Each finding is a `(kind, detail)` pair handed to `report`, which sends it to the parent
at once (a later change to this process cannot take it back). A learner who reaches the
harness without any of these events is not detected: FORMAT.md states what remains.
"""

from __future__ import annotations

import builtins
import gc
import importlib
import json
import json.encoder
import os
import re
import socket
import sys
import sysconfig
import types
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any

import torch

AUTOGRAD_GRAPH = importlib.import_module("torch.autograd.graph")
AUTOGRAD_FUNCTION = importlib.import_module("torch.autograd.function")
AUTOGRAD_VARIABLE = importlib.import_module("torch.autograd.variable")
OPTIMIZER = importlib.import_module("torch.optim.optimizer")

MAX_DETAIL = 300
# A module's record of warnings it issued; builtins._, the last value sys.displayhook
# showed (doctest runs each example as an interactive statement).
VOLATILE = frozenset({"__warningregistry__", "_"})
PROC_PREFIXES = ("/proc/self", "/proc/thread-self", "/dev/fd", "/proc/")
# What the process may read about itself, read-only, unflagged (a learner printing its
# own memory use): none of these holds an address, a descriptor or another file's bytes.
OWN_STATUS = frozenset({"/proc/self/status", "/proc/self/statm", "/proc/self/stat",
                        "/proc/self/io", "/proc/self/limits"})  # fmt: skip
# The trace function doctest saves and restores around each example: set from these
# stdlib files, it is not flagged when set; one still installed over the harness's
# frames (the recorder's wrappers, the end of the learner's code) is.
TRACE_RESTORERS = frozenset({os.path.join(sysconfig.get_paths()["stdlib"], "doctest.py")})
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
GC_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
# Watched while the harness runs too (the harness itself never raises them, but learner
# code that Python or torch calls back then can: a hook of torch's, a finalizer, a thread,
# a signal handler): what reaches a harness frame or the heap.
ALWAYS_WATCHED = GC_EVENTS | {"object.__getattr__", "sys._current_frames"}
TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})

Report = Callable[[str, str], None]


def _text(value: Any) -> str:
    try:
        return str(value)[:MAX_DETAIL]
    except Exception:
        return f"<{type(value).__name__}>"


def _path(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _per_process(path: str) -> bool:
    """/proc/self/..., /proc/<pid>/..., /dev/fd/...: not /proc/cpuinfo or /proc/meminfo."""
    if path.startswith(("/proc/self", "/proc/thread-self", "/dev/fd")):
        return True
    if path.startswith("/proc/"):
        head = path[len("/proc/") :].split("/", 1)[0]
        return head.isdigit()
    return False


_OWN_TASK = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?(?=/|$)")


def spellings(path: str) -> tuple[str, ...]:
    """The forms a path is classified by: as written made absolute and normalised (`.`,
    `..`, doubled slashes), and resolved (`realpath`: symlinks, `/proc/self` itself),
    each with `/proc/self`, `/proc/thread-self`, `/proc/<own pid>` and their
    `/task/<tid>` spelt `/proc/self` (another process's `/proc/<pid>` is kept)."""
    absolute = path if path.startswith("/") else os.path.join(os.getcwd(), path)
    written = "/" + os.path.normpath(absolute).lstrip("/")
    try:
        resolved = os.path.realpath(absolute)
    except (OSError, ValueError):
        resolved = written
    return tuple(dict.fromkeys(_canonical(form) for form in (written, resolved)))


def _canonical(path: str) -> str:
    if path.startswith("/dev/fd"):
        path = "/proc/self/fd" + path[len("/dev/fd") :]
    found = _OWN_TASK.match(path)
    if found is None:
        return path
    head = found.group(0)[len("/proc/") :].split("/", 1)[0]
    if head.isdigit() and int(head) != os.getpid():
        return path  # another process: stays /proc/<pid>
    return "/proc/self" + path[found.end() :]


def _opened_read_only(args: tuple[Any, ...]) -> bool:
    """An `open` event's (path, mode, flags): builtins.open gives a mode string, os.open
    None and its flags."""
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else None
    if isinstance(mode, str):
        return not set(mode) & set("wax+")
    return isinstance(flags, int) and flags & (os.O_ACCMODE | os.O_CREAT | os.O_TRUNC) == 0


class AuditGuard:
    """The audit hook. `harness_files` are the code files whose frames are the harness's."""

    def __init__(self, report: Report, harness_files: Iterable[str], protected: Iterable[Any]):
        self.report = report
        self.harness_files = frozenset(harness_files)
        self.harness_dir = os.path.dirname(next(iter(self.harness_files), "/harness/x"))
        resolved = os.path.realpath(self.harness_dir)
        self.harness_roots = tuple(dict.fromkeys((self.harness_dir, resolved)))
        self.protected = {id(obj) for obj in protected}
        self.active = False
        self.filtering = False  # HeapView's own call of the real gc.get_objects
        self.trusted = False  # the harness reading its own frames (`trusting`)
        self._busy = False
        self.traces = (sys.gettrace(), sys.getprofile())

    def install(self) -> None:
        sys.addaudithook(self.hook)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """Active while the learner's code runs; the harness's own work is not recorded."""
        self.active = True
        try:
            yield
        finally:
            self.active = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        previous, self.active = self.active, False
        try:
            yield
        finally:
            self.active = previous

    @contextmanager
    def trusting(self) -> Iterator[None]:
        """The harness's own reads of frames (a learner's exception's traceback): not
        recorded, even the events watched while the harness runs."""
        previous, self.trusted = self.trusted, True
        try:
            yield
        finally:
            self.trusted = previous

    def lingering_trace(self) -> tuple[str, str] | None:
        """A trace or profile function still installed when the learner's code hands back
        to the harness (set by code whose call was not itself flagged, e.g. doctest)."""
        if (sys.gettrace(), sys.getprofile()) == self.traces:
            return None
        return "trace-hook", "a trace or profile function was left installed over the harness"

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy or self.trusted or not (self.active or event in ALWAYS_WATCHED):
            return
        self._busy = True
        try:
            found = self.classify(event, args)
            if found is not None:
                self.report(*found)
        except Exception:  # a hook that raises would break the learner's call
            pass
        finally:
            self._busy = False

    def classify(self, event: str, args: tuple[Any, ...]) -> tuple[str, str] | None:
        if event.startswith("ctypes."):
            return "ctypes", event
        if event in GC_EVENTS:
            return self._gc_event(event)
        if event in TRACE_EVENTS:
            return self._trace_event(event)
        if event == "sys.addaudithook":
            return "audit-hook", event
        if event == "socket.__new__":
            return "socket", "a socket object was created"
        if event in ("os.kill", "os.killpg") and args:
            return self._signal(event, args[0])
        if event == "sys._current_frames":
            return "frame-walk", event
        if event == "open" and args:
            return self._path_event(event, args[0], _opened_read_only(args))
        if event in ("os.listdir", "os.scandir") and args:
            return self._path_event(event, args[0], False)
        if event == "sys._getframe" and args and self._harness_frame(args[0]):
            return "frame-walk", f"sys._getframe reached the harness's {args[0].f_code.co_name}"
        if event == "object.__getattr__" and len(args) == 2:
            return self._frame_attribute(args[0], args[1])
        changes = event in ("object.__setattr__", "object.__delattr__") and len(args) >= 2
        if changes and id(args[0]) in self.protected:
            return "replaced", f"{_qualified(args[0])}.{_text(args[1])} ({event})"
        return None

    def _gc_event(self, event: str) -> tuple[str, str] | None:
        """`gc.get_objects` through the heap view (HeapView) hides the harness: not a
        finding; the real one (reached around the view) and the targeted walks are."""
        if event == "gc.get_objects" and self.filtering:
            return None
        return "gc-walk", event

    def _trace_event(self, event: str) -> tuple[str, str] | None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None and frame.f_code.co_filename in TRACE_RESTORERS:
            return None  # doctest restoring what it saved; one left installed is flagged
        return "trace-hook", event

    def _path_event(self, event: str, raw: Any, read_only: bool) -> tuple[str, str] | None:
        path = _path(raw)
        if path is None:
            return None
        forms = spellings(path)
        shown = " = ".join(dict.fromkeys((path, *forms)))
        if any(_per_process(form) for form in forms):
            if read_only and all(form in OWN_STATUS for form in forms):
                return None  # the process's own status, read: what a learner may print
            return "proc-access", f"{event} {shown}"[:MAX_DETAIL]
        if any(self._harness_path(form) for form in forms):
            return "harness-file", f"{event} {shown}"[:MAX_DETAIL]
        return None

    def _harness_path(self, path: str) -> bool:
        return any(path == root or path.startswith(root + "/") for root in self.harness_roots)

    def _signal(self, event: str, pid: Any) -> tuple[str, str] | None:
        if not isinstance(pid, int) or (0 < pid != os.getppid() and event == "os.kill"):
            return None
        return "signal", f"{event} aimed at {pid} (the harness or a process group)"

    def _frame_attribute(self, obj: Any, name: Any) -> tuple[str, str] | None:
        if name not in FRAME_ATTRIBUTES:
            return None
        frame = getattr(obj, name, None)
        if self._harness_frame(frame):
            return "frame-walk", f"{type(obj).__name__}.{name} reached a harness frame"
        return None

    def _harness_frame(self, frame: Any) -> bool:
        return isinstance(frame, types.FrameType) and frame.f_code.co_filename in self.harness_files


class Lure(dict[str, Any]):
    """A record-shaped dict that only `HeapView` hands out: reading it is looking through
    the heap for the harness's records (honest code counting tensors never does)."""

    def __init__(self, report: Report) -> None:
        super().__init__()
        self.report = report
        self.sprung = False

    def _spring(self) -> None:
        if not self.sprung:
            self.sprung = True
            self.report("gc-walk", "a harness record found through gc.get_objects was read")

    def __contains__(self, key: object) -> bool:
        self._spring()
        return False

    def __getitem__(self, key: str) -> Any:
        self._spring()
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        self._spring()
        return iter(())

    def __len__(self) -> int:
        self._spring()
        return 0

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self._spring()
        return default

    def keys(self) -> Any:
        self._spring()
        return super().keys()

    def values(self) -> Any:
        self._spring()
        return super().values()

    def items(self) -> Any:
        self._spring()
        return super().items()


class HeapView:
    """`gc.get_objects` from the learner's code (or code of the learner's that runs while
    the harness works): the objects it may know of, not the harness's. Hidden: every
    object alive when the view was armed (the harness, its envelope, the libraries),
    instances of the harness's classes, its frames, functions
    and generators, what the recorder's records hold, and `withheld` (the ids of what a
    micro-batch stream holds and has not handed out, construct.WITHHELD); added: one
    `Lure`. Counting live tensors, the usual leak check, sees exactly the learner's
    tensors and is not flagged; reading the lure is `gc-walk`, and so is reaching the
    real function around the view."""

    def __init__(
        self,
        guard: AuditGuard,
        original: Callable[..., list[Any]],
        harness_types: Iterable[type],
        records: Callable[[], list[Any]],
        withheld: AbstractSet[int] = frozenset(),
    ) -> None:
        self.guard = guard
        self.original = original
        self.harness_types = tuple(harness_types)
        self.records = records
        self.withheld = withheld  # live: the ids construct.WITHHELD holds at each call
        self.before: list[Any] = []
        self.hidden: set[int] = set()
        self.lure = Lure(guard.report)

    def arm(self) -> None:
        """Takes the objects alive now (held, so that their ids stay theirs)."""
        self.guard.filtering = True
        try:
            self.before = self.original()
        finally:
            self.guard.filtering = False
        self.hidden = {id(obj) for obj in self.before}
        self.hidden.update((id(self.before), id(self.hidden), id(self.lure)))

    def __call__(self, generation: int | None = None) -> list[Any]:
        self.guard.filtering = True
        try:
            found = self.original() if generation is None else self.original(generation)
        finally:
            self.guard.filtering = False
        hidden = self.hidden | self._recorded() | {id(found)}
        withheld = self.withheld
        kept = [
            obj
            for obj in found
            if id(obj) not in hidden and id(obj) not in withheld and not self._harness(obj)
        ]
        kept.append(self.lure)
        return kept

    def _harness(self, obj: Any) -> bool:
        if isinstance(obj, self.harness_types):
            return True
        files = self.guard.harness_files
        if isinstance(obj, types.FrameType):
            return obj.f_code.co_filename in files
        if isinstance(obj, types.GeneratorType):  # a micro-batch stream (construct.py)
            return obj.gi_code.co_filename in files
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
        return isinstance(obj, types.FunctionType) and obj.__code__.co_filename in files

    def _recorded(self) -> set[int]:
        """The containers the recorder's records are made of (plain data, no tensors)."""
        seen: set[int] = set()
        stack = list(self.records())
        while stack:
            item = stack.pop()
            if id(item) in seen or not isinstance(item, dict | list | tuple):
                continue
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
        return seen


def _qualified(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or ""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", type(obj).__name__)
    return f"{module}.{name}" if module else str(name)


def watched_namespaces(harness_modules: Iterable[types.ModuleType]) -> dict[str, Any]:
    """Everything whose attributes the harness relies on, by the name findings use."""
    spaces: dict[str, Any] = {
        "builtins": builtins,
        "torch.autograd": torch.autograd,
        "torch.autograd.graph": AUTOGRAD_GRAPH,
        "torch.autograd.function": AUTOGRAD_FUNCTION,
        "torch.autograd.Function": torch.autograd.Function,
        "torch.autograd.variable.Variable": AUTOGRAD_VARIABLE.Variable,
        "torch.Tensor": torch.Tensor,
        "torch.optim.optimizer": OPTIMIZER,
        "torch.optim.Optimizer": torch.optim.Optimizer,
        "json": json,
        "json.encoder": json.encoder,
        "json.JSONEncoder": json.JSONEncoder,
        "socket.socket": socket.socket,
        "gc": gc,
    }
    for module in harness_modules:
        spaces[f"harness.{module.__name__}"] = module
        for name, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == module.__name__:
                spaces[f"harness.{module.__name__}.{name}"] = value
    return spaces


def protected_objects(spaces: dict[str, Any]) -> list[Any]:
    """Objects whose attribute changes the audit hook reports (modules are compared
    by the snapshot only: setting a module attribute raises no audit event)."""
    return [obj for obj in spaces.values() if isinstance(obj, type)] + [
        torch._C.TensorBase,
        type(AUTOGRAD_VARIABLE.Variable._execution_engine),
    ]


class Snapshot:
    """Identities of every attribute of the watched namespaces, and of their functions'
    code objects; `changes()` names what differs now."""

    def __init__(self, spaces: dict[str, Any]) -> None:
        self.spaces = spaces
        self.taken = {name: self._identities(space) for name, space in spaces.items()}
        self.engine = id(AUTOGRAD_VARIABLE.Variable._execution_engine)
        self.reported: set[str] = set()

    @staticmethod
    def _identities(space: Any) -> dict[str, tuple[int, int | None]]:
        function = types.FunctionType  # not subclassable: `type(v) is` equals isinstance
        return {
            key: (id(value), id(value.__code__) if type(value) is function else None)
            for key, value in list(vars(space).items())
        }

    def changes(self) -> list[tuple[str, str]]:
        """(kind, detail) for each difference not reported before."""
        found: list[str] = []
        for name, space in self.spaces.items():
            before = self.taken[name]
            now = self._identities(space)
            if now == before:
                continue  # (compared in C: most namespaces are untouched)
            is_module = isinstance(space, types.ModuleType)
            for key in before.keys() | now.keys():
                if before.get(key) == now.get(key) or key in VOLATILE:
                    continue
                if (
                    key not in before
                    and is_module
                    and isinstance(vars(space)[key], types.ModuleType)
                ):
                    continue  # a submodule imported later: torch adds these lazily
                found.append(f"{name}.{key}")
        if id(AUTOGRAD_VARIABLE.Variable._execution_engine) != self.engine:
            found.append("torch.autograd.variable.Variable._execution_engine")
        fresh = [("replaced", item) for item in found] + [("torch-mode", m) for m in _modes()]
        fresh = [item for item in fresh if item[1] not in self.reported]
        self.reported.update(detail for _, detail in fresh)
        return fresh


def _modes() -> list[str]:
    """A torch function/dispatch mode left active can rewrite what the harness encodes."""
    found = []
    if torch._C._len_torch_function_stack() > 0:
        found.append("torch function mode active")
    if torch._C._len_torch_dispatch_stack() > 0:
        found.append("torch dispatch mode active")
    return found
