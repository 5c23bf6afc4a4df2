"""The runner child: runs the code under test and reports it to the harness parent.

Runs inside the sandbox after main.py forked it (stdlib + torch + numpy only), holding
fds 0 (/dev/null), 1 and 2 (a pipe to the parent) and the child's end of the protocol
channel (channel.CHILD_FD), nothing else. Before any learner code it installs, in this
order: the seccomp filter (confine.py), the autograd wrappers (instrument.py), where
asked the stand-in GPU (standin.py), the snapshot of what the harness relies on and the
audit hook (guard.py); then it takes the harness's modules out of `sys.modules` and
`sys.path`. (A second run's other starting values are already in the source it gets:
the worker rewrote it, grader/rewrite.py.)

Messages to the parent (FORMAT.md section 2): `tamper` (at once, when seen), `next`
(function jobs: a case starts; learner jobs ask for it, the parent answers `case` or
`end`), `case-result`, and one final `result`. The parent, not this process, frames the
capture, and it reads what the code printed from the pipe on fds 1 and 2 itself (no
object here captures it: sys.stdout writes through to fd 1, main.py `write_through`).
"""

from __future__ import annotations

import _thread
import builtins
import contextlib
import gc
import linecache
import os
import random
import sys
import time
import traceback
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import casework
import channel
import confine
import construct
import guard
import instrument
import numpy as np
import standin
import torch
import values
from instrument import Recorder
from values import decode, encode

PROTOCOL = 1
SUBMISSION = "submission.py"
CASES = "cases.py"
SHOWN_FILES = (SUBMISSION, CASES)  # traceback frames kept; harness frames never shown
MAX_MESSAGE = 2_000
MAX_TRACEBACK = 8_000
MAX_TAMPER = 100
SEED = 0
_GC_ENABLED, _GC_DISABLE, _GC_ENABLE = gc.isenabled, gc.disable, gc.enable
_thread_count = _thread._count  # taken at import: the learner's code cannot replace it here
HARNESS_MODULES = (
    "casework", "channel", "confine", "conversation", "guard", "instrument", "values", "runner",
    "standin", "construct",
)  # fmt: skip


_warmed = [False]


def warm_up_autograd() -> None:
    """Takes, before any job data is read, the autograd paths whose first call imports
    modules lazily, so that no job pays for them inside its own limits: a backward with
    an explicit gradient (what every scaled run and many learners' calls make) imports
    torch's symbolic shapes and sympy, about 0.6 s of CPU. Draws no random numbers and
    starts no thread (the zygote forks after it). Once per process: a job forked from a
    zygote that ran it skips it."""
    if _warmed[0]:
        return
    leaf = torch.ones(2, requires_grad=True)
    (leaf * leaf).sum().backward()
    (leaf * leaf).backward(torch.ones(2))
    torch.autograd.grad((leaf * leaf).sum(), leaf, grad_outputs=torch.tensor(1.0))
    _warmed[0] = True


def reseed(fresh_torch: bool = False) -> None:
    """Seeds every generator with SEED; with `fresh_torch` (envelope `seed_by_learner`),
    torch's is seeded from the OS as a fresh interpreter's is, so code that is asked to
    seed torch and does not is not seeded for it."""
    if fresh_torch:
        torch.seed()
    else:
        torch.manual_seed(SEED)
    np.random.seed(SEED)
    random.seed(SEED)


def describe_exception(error: BaseException) -> dict[str, Any]:
    """Type, message, the learner's line, and a traceback of the shown files only."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename in SHOWN_FILES]
    line: int | None = None
    for frame in frames:
        if frame.filename == SUBMISSION:
            line = frame.lineno
    if isinstance(error, SyntaxError) and error.filename == SUBMISSION:
        line = error.lineno
    lines = traceback.format_list(frames)
    lines += traceback.format_exception_only(type(error), error)
    try:
        message = str(error)
    except Exception:
        message = "<unprintable message>"
    return {
        "type": type(error).__name__,
        "mro": instrument.mro_names(error),
        "message": message[:MAX_MESSAGE],
        "line": line,
        "traceback": "".join(lines)[-MAX_TRACEBACK:],
    }


def warm_sources(files: Iterable[str]) -> None:
    """Reads the harness's own sources into `linecache` before the audit hook is armed: a
    stack trace the learner's code (or a library it calls: torch's lazy CUDA seeding,
    `logging` with `stack_info`) formats while it runs shows the harness's frames, and
    reading their lines then is not an attempt on the harness's files (FORMAT.md §7)."""
    for filename in files:
        linecache.getlines(filename)


def compile_source(source: str, filename: str) -> Any:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec", dont_inherit=True)


class Runner:
    def __init__(self, envelope: dict[str, Any], end: channel.ChildEnd) -> None:
        limits = envelope.get("limits", {})
        self.envelope = envelope
        self.end = end
        self.max_elements = int(limits.get("tensor_elements", 100_000))
        self.recorder = Recorder(self.max_elements)
        self.recorder.on_tamper = self.tamper
        self.names: list[str] = list(envelope.get("names", []))
        self.tampers = 0
        self.threads_flagged = False
        self.traced = False  # a lingering trace function is reported once
        self.audit: guard.AuditGuard | None = None
        self.snapshot: guard.Snapshot | None = None
        self.device_mode: Any = contextlib.nullcontext()  # the stand-in GPU's mode
        self.learner_seeds = envelope.get("seed_by_learner") is True
        self.drawn_seed: int | None = None  # torch's seed the harness left (learner seeds)
        self.learner_collects = True  # automatic gc, as the learner's code left it

    # -- integrity ------------------------------------------------------------------

    def tamper(self, kind: str, detail: str) -> None:
        """Sends one finding to the parent at once (later tampering cannot recall it)."""
        if self.tampers >= MAX_TAMPER:
            return
        self.tampers += 1
        if self.audit is None:
            self.end.send({"type": "tamper", "kind": kind, "detail": detail})
            return
        with self.audit.paused():  # our own send is not the learner's socket
            self.end.send({"type": "tamper", "kind": kind, "detail": detail})

    def protect(self) -> None:
        """Everything that must be in place before the first line of learner code."""
        confine.dumpable()
        confine.install(os.getppid(), channel.CHILD_FD)
        self.recorder.install()
        casework.install_watchers()
        if self.envelope.get("stand_in") == "cuda" and self.envelope["kind"] == "script":
            self.device_mode, values.device_name = standin.install()
        scale = self.envelope.get("grad_scale")
        if isinstance(scale, float) and self.envelope["kind"] == "script":
            self.recorder.grad_scale = scale  # every gradient seed scaled (instrument.py)
        modules = [casework, channel, confine, guard, instrument, values, standin]
        modules.append(construct)
        modules.append(sys.modules[__name__])
        spaces = guard.watched_namespaces(modules)
        files = {m.__file__ for m in modules if m.__file__}
        warm_sources(files)
        self.audit = guard.AuditGuard(self.tamper, files, guard.protected_objects(spaces))
        heap = self.heap_view(spaces)
        gc.get_objects = heap  # the snapshot below holds the view as gc's own
        self.snapshot = guard.Snapshot(spaces)
        self.audit.install()
        for name in HARNESS_MODULES:
            sys.modules.pop(name, None)
        harness_dir = os.path.dirname(os.path.abspath(__file__))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != harness_dir]
        heap.arm()  # last: everything alive now is hidden from the learner's gc
        self.learner_collects = _GC_ENABLED()
        _GC_DISABLE()  # on only while the learner's code runs (`watching`)

    def heap_view(self, spaces: dict[str, Any]) -> guard.HeapView:
        """The learner's `gc.get_objects` (guard.HeapView): the harness's objects hidden."""
        assert self.audit is not None
        classes = [v for k, v in spaces.items() if k.startswith("harness.") and isinstance(v, type)]
        recorder = self.recorder

        def records() -> list[Any]:
            return [recorder.calls, recorder.steps, recorder.grad_results,
                    recorder.last_backward, recorder.last_step]  # fmt: skip

        return guard.HeapView(self.audit, gc.get_objects, classes, records, construct.WITHHELD)

    def verify(self) -> None:
        """Compares what the harness relies on with the snapshot taken before."""
        assert self.snapshot is not None and self.audit is not None
        for kind, detail in self.snapshot.changes():
            self.tamper(kind, detail)
        lingering = self.audit.lingering_trace()
        if lingering is not None and not self.traced:
            self.traced = True
            self.tamper(*lingering)

    def describe(self, error: BaseException) -> dict[str, Any]:
        """describe_exception, whose traceback walk reads harness frames: trusted."""
        assert self.audit is not None
        with self.audit.trusting():
            return describe_exception(error)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """While the learner's code runs: the audit hook on, and automatic garbage
        collection as the learner's code last left it. The harness runs with it off, so
        that no gc callback of the learner's, nor a finalizer a collection would run,
        runs while the harness works on a case."""
        assert self.audit is not None
        with self.audit.watching():
            if self.learner_collects:
                _GC_ENABLE()
            try:
                yield
            finally:
                self.learner_collects = _GC_ENABLED()
                _GC_DISABLE()

    # -- the run --------------------------------------------------------------------

    def prepare(self) -> None:
        torch.set_num_threads(1)
        warnings.simplefilter("default")
        self.protect()
        self.reseed()

    def reseed(self) -> None:
        reseed(self.learner_seeds)
        if self.learner_seeds:
            self.drawn_seed = torch.initial_seed()

    def seeded(self) -> dict[str, Any]:
        """`torch_seeded` (learner-seeded exercises): did the code seed torch itself?"""
        if self.drawn_seed is None:
            return {}
        return {"torch_seeded": torch.initial_seed() != self.drawn_seed}

    def run(self) -> dict[str, Any]:
        self.prepare()
        if self.envelope["kind"] == "function":
            return self.run_function()
        return self.run_script()

    # -- script exercises ------------------------------------------------------------

    def run_script(self) -> dict[str, Any]:
        main = types.ModuleType("__main__")  # what `doctest.testmod()` and others look up
        namespace: dict[str, Any] = main.__dict__
        namespace["__builtins__"] = builtins
        sys.modules["__main__"] = main
        self.recorder.lookup = lambda: {n: namespace[n] for n in self.names if n in namespace}
        exception, duration = self.execute(self.envelope["files"][SUBMISSION], namespace)
        self.verify()
        variables = {}
        for name in self.names:
            if name in namespace:
                variables[name] = self.safe_encode(namespace[name])
        provenance = self.recorder.provenance()
        return {
            "variables": variables,
            "backward_calls": self.recorder.calls,
            "backward_calls_truncated": self.recorder.truncated,
            "optimizer_steps": self.recorder.optimizer_steps,
            "provenance": provenance,
            "exception": exception,
            "duration_s": duration,
            **self.seeded(),
        }

    def execute(
        self, source: str, namespace: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, float]:
        started = time.perf_counter()
        exception = None
        try:
            code = compile_source(source, SUBMISSION)
            with self.watching(), self.device_mode:
                exec(code, namespace)
        except SystemExit as error:
            if error.code not in (None, 0):
                exception = self.describe(error)
        except BaseException as error:
            exception = self.describe(error)
        return exception, round(time.perf_counter() - started, 6)

    def safe_encode(self, value: Any) -> dict[str, Any]:
        try:
            return encode(value, self.max_elements)
        except Exception as error:
            return {"kind": "object", "type": f"unencodable ({type(error).__name__})"}

    # -- function exercises ----------------------------------------------------------

    def run_function(self) -> dict[str, Any]:
        files = self.envelope["files"]
        reference = self.envelope["mode"] == "reference"
        exercise: dict[str, Any] = {}
        if reference:  # exercise code: only ever present in the reference's sandbox
            exercise = {"__name__": "cases", "__builtins__": builtins}
            exec(compile(files[CASES], CASES, "exec", dont_inherit=True), exercise)
        namespace: dict[str, Any] = {"__name__": "submission", "__builtins__": builtins}
        exception, duration = self.execute(files[SUBMISSION], namespace)
        self.verify()
        defined = {name: name in namespace for name in self.names}
        entry = namespace.get(self.envelope["entry"]) if exception is None else None
        missing = exception is None and self.envelope["entry"] not in namespace
        if reference:
            self.reference_cases(exercise, entry, missing)
        else:
            self.learner_cases(entry, missing)
        return {
            "defined": defined,
            "variables": {},
            "backward_calls": [],
            "optimizer_steps": self.recorder.optimizer_steps,
            "exception": exception,
            "duration_s": duration,
        }

    def reference_cases(self, exercise: dict[str, Any], entry: Any, missing: bool) -> None:
        reseed()
        made = exercise["make_cases"](int(self.envelope["seed"]), int(self.envelope["trials"]))
        variants: Callable[..., dict[str, Any]] | None = exercise.get("variants")
        for index, case in enumerate(made):
            self.end.send({"type": "next"})  # where this case's printed output starts
            raw = self.safe_encode(case)
            decoded = decode(raw)  # the learner's run gets exactly this data
            result = self.run_case(entry, decoded, missing)
            if variants is not None:
                reseed()
                whole = decode(raw)  # run_case let go of the decoded case's inputs
                with self.recorder.paused():
                    extra = variants(whole, casework.prepare(whole).values)
                for key, value in extra.items():
                    result["observations"][f"_{key.lstrip('_')}"] = self.safe_encode(value)
            result["input"] = raw
            self.end.send({"type": "case-result", "index": index, "result": result})

    def learner_cases(self, entry: Any, missing: bool) -> None:
        index = 0
        while True:
            # what the last case's records held of the learner's objects dies now, before
            # the next case's data arrives (a finalizer of theirs runs here, not later)
            self.recorder.reset()
            self.flag_running_threads()
            taken = self.next_case()
            if taken is None:
                return
            case, sealed = taken
            result = self.run_case(entry, case, missing, sealed)
            self.end.send({"type": "case-result", "index": index, "result": result})
            index += 1

    def flag_running_threads(self) -> None:
        """A thread of the learner's still running when a hidden case is asked for could
        read the case's data in the harness's objects before `next_case` seals it (it
        holds no frame of `next_case`, but a frame it kept reaches the runner, whose
        channel buffers the bytes as they arrive): `thread`, once per run. Python threads
        only (`_thread._count`, those started by `threading` or `_thread`); torch's own
        are native and never run Python code."""
        running = _thread_count()
        if running and not self.threads_flagged:
            self.threads_flagged = True
            self.tamper("thread", f"{running} thread(s) of the code still running when a "
                                  "case was handed out")  # fmt: skip

    def next_case(self) -> tuple[Any, dict[str, construct.Sealed]] | None:
        """The next hidden case, decoded and its batch sealed (`casework.seal`), or None
        at the end. In a frame of its own, which no frame of the learner's reaches through
        `f_back`, with the learner's Python signal handlers held off
        (`casework.signals_held`): nothing of the learner's runs before the batch is in
        the stream. The case returned no longer holds it."""
        with casework.signals_held():
            self.end.send({"type": "next"})
            message = self.end.receive()
            if message.get("type") != "case":
                return None
            case = decode(message.pop("case"))
            return case, casework.seal(case)

    def run_case(
        self,
        entry: Any,
        case: Any,
        missing: bool,
        sealed: dict[str, construct.Sealed] | None = None,
    ) -> dict[str, Any]:
        if sealed is None:  # first: before torch's Python code runs for the case
            sealed = casework.seal(case)
        self.recorder.reset()
        self.reseed()
        observations: dict[str, Any] = {}
        exception = None
        started = time.perf_counter()
        if missing:
            name = self.envelope["entry"]
            exception = self.describe(NameError(f"name {name!r} is not defined"))
        else:
            try:
                env = casework.prepare(case, lambda: self.recorder.api_calls, sealed)
                casework.release(case)
                self.recorder.watch = lambda: observed_values(env, case)
                with self.watching():
                    casework.call_entry(env, case, entry)
                    with self.recorder.paused():
                        casework.finish(env, case, entry)
                observations = {
                    k: self.safe_encode(v) for k, v in casework.observations(env, case).items()
                }
            except casework.CaseError:
                raise
            except BaseException as error:
                exception = self.describe(error)
        self.recorder.watch = dict
        self.verify()
        return {
            "observations": observations,
            "exception": exception,
            "backward_calls": self.recorder.calls,
            "grads_filled": sorted(self.recorder.filled),
            "duration_s": round(time.perf_counter() - started, 6),
        }


def observed_values(env: casework.Env, case: Any) -> dict[str, Any]:
    """The case's values that its `observe` names directly ({key: value})."""
    observe = case.get("observe", {}) if isinstance(case, dict) else {}
    if not isinstance(observe, dict):
        return {}
    return {
        str(key): env.values[name]
        for key, name in observe.items()
        if isinstance(name, str) and name in env.values
    }


def run_child(envelope: dict[str, Any], max_message: int) -> None:
    """Entry of the runner child: runs the job, sends the result, exits."""
    end = channel.ChildEnd(channel.CHILD_FD, max_message)
    try:
        body = Runner(envelope, end).run()
        sys.stdout = sys.__stdout__
        end.send({"type": "result", "body": body})
    except BaseException as error:
        sys.stdout = sys.__stdout__
        failure = {"type": type(error).__name__, "message": str(error)[:MAX_MESSAGE]}
        end.send({"type": "harness-error", "error": failure})
