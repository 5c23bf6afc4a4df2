"""Tamper detection in the runner child (FORMAT.md section 7): what in-process code cannot
prevent, it records.

- `AuditGuard`: a PEP 578 audit hook, installed before the learner's code runs and active
  only while it runs, that records attempts to reach the harness: ctypes, per-process
  `/proc` and `/dev/fd` paths, walking objects through `gc`, reaching a harness frame
  (`sys._getframe`, a traceback's or generator's frame), trace/profile hooks, a second
  audit hook, new sockets (the way to the protocol descriptor), and attribute changes
  on protected objects (torch's autograd classes, the harness's own classes).
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
import socket
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

AUTOGRAD_GRAPH = importlib.import_module("torch.autograd.graph")
AUTOGRAD_FUNCTION = importlib.import_module("torch.autograd.function")
AUTOGRAD_VARIABLE = importlib.import_module("torch.autograd.variable")
OPTIMIZER = importlib.import_module("torch.optim.optimizer")

MAX_DETAIL = 300
VOLATILE = frozenset({"__warningregistry__"})  # a module's record of warnings it issued
PROC_PREFIXES = ("/proc/self", "/proc/thread-self", "/dev/fd", "/proc/")
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
GC_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
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


class AuditGuard:
    """The audit hook. `harness_files` are the code files whose frames are the harness's."""

    def __init__(self, report: Report, harness_files: Iterable[str], protected: Iterable[Any]):
        self.report = report
        self.harness_files = frozenset(harness_files)
        self.harness_dir = os.path.dirname(next(iter(self.harness_files), "/harness/x"))
        self.protected = {id(obj) for obj in protected}
        self.active = False
        self._busy = False

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

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or self._busy:
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
            return "gc-walk", event
        if event in TRACE_EVENTS:
            return "trace-hook", event
        if event == "sys.addaudithook":
            return "audit-hook", event
        if event == "socket.__new__":
            return "socket", "a socket object was created"
        if event in ("os.kill", "os.killpg") and args:
            return self._signal(event, args[0])
        if event == "sys._current_frames":
            return "frame-walk", event
        if event in ("open", "os.listdir", "os.scandir") and args:
            return self._path_event(event, args[0])
        if event == "sys._getframe" and args and self._harness_frame(args[0]):
            return "frame-walk", f"sys._getframe reached the harness's {args[0].f_code.co_name}"
        if event == "object.__getattr__" and len(args) == 2:
            return self._frame_attribute(args[0], args[1])
        changes = event in ("object.__setattr__", "object.__delattr__") and len(args) >= 2
        if changes and id(args[0]) in self.protected:
            return "replaced", f"{_qualified(args[0])}.{_text(args[1])} ({event})"
        return None

    def _path_event(self, event: str, raw: Any) -> tuple[str, str] | None:
        path = _path(raw)
        if path is None:
            return None
        if _per_process(path):
            return "proc-access", f"{event} {path}"[:MAX_DETAIL]
        if path.startswith(self.harness_dir + "/"):
            return "harness-file", f"{event} {path}"[:MAX_DETAIL]
        return None

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
