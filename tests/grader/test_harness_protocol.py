"""The harness parent's side of the protocol, its framing and the child's seccomp filter,
tested without a sandbox (these modules are standard library only)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from grader.engine import submission_seed

HARNESS = Path(__file__).resolve().parents[2] / "grader" / "harness"
sys.path.insert(0, str(HARNESS))

import channel  # noqa: E402
from conversation import Conversation, Output  # noqa: E402


def encoded_case(visible: bool, marker: float) -> dict[str, Any]:
    return {
        "kind": "dict",
        "items": {
            "visible": {"kind": "bool", "value": visible},
            "inputs": {"kind": "dict", "items": {"x": {"kind": "number", "value": marker}}},
        },
    }


def learner_talk(cases: int = 3, *, example: bool = True) -> Conversation:
    envelope = {
        "protocol": 1,
        "kind": "function",
        "mode": "learner",
        "cases": [encoded_case(example and i == 0, float(i)) for i in range(cases)],
    }
    return Conversation(envelope)


def case_result(index: int, **extra: Any) -> dict[str, Any]:
    result = {"observations": {}, "exception": None, "backward_calls": []}
    return {"type": "case-result", "index": index, "result": {**result, **extra}}


def finished_capture(talk: Conversation) -> dict[str, Any]:
    ended = {"reason": "exit", "code": 0, "message": "exited with status 0"}
    return talk.capture(ended, torch_version="2.13.0", device="cpu")


def kinds(talk: Conversation) -> list[str]:
    return [event["kind"] for event in talk.tamper]


def test_hidden_cases_are_handed_out_one_at_a_time_and_only_when_asked() -> None:
    talk = learner_talk(2)
    (first,) = talk.receive({"type": "next"})
    assert first == {"type": "case", "index": 0, "case": encoded_case(True, 0.0)}
    assert talk.receive({"type": "next"}) == []  # case 0 not answered yet: nothing more
    assert kinds(talk) == ["protocol"]
    talk.receive(case_result(0))
    (second,) = talk.receive({"type": "next"})
    assert second["index"] == 1
    talk.receive(case_result(1))
    assert talk.receive({"type": "next"}) == [{"type": "end"}]


def test_the_parent_sets_what_it_knows_and_ignores_the_childs_claims() -> None:
    talk = learner_talk(1, example=False)
    talk.receive({"type": "next"})
    forged = case_result(0, visible=True, input={"kind": "none"})
    talk.receive(forged)
    talk.receive({"type": "next"})
    body = {"stdout": "", "protocol": 99, "terminated": None, "tamper": [], "torch": "9.9"}
    talk.receive({"type": "result", "body": body})
    capture = finished_capture(talk)
    assert capture["protocol"] == 1 and capture["torch"] == "2.13.0"
    assert capture["terminated"] is None
    (case,) = capture["cases"]
    assert case["visible"] is False  # case 0 of this job is hidden: the child cannot say otherwise
    assert "input" not in case
    details = " ".join(event["detail"] for event in capture["tamper"])
    for field in ("visible", "input", "stdout", "protocol", "terminated", "tamper", "torch"):
        assert repr(field) in details


def test_a_final_result_before_every_case_ran_is_a_failed_run_and_flagged() -> None:
    talk = learner_talk(3)
    talk.receive({"type": "next"})
    talk.receive({"type": "result", "body": {"stdout": ""}})  # written by the learner's code
    capture = finished_capture(talk)
    assert capture["terminated"]["reason"] == "harness-error"
    assert capture["cases"] == []
    assert kinds(talk) == ["protocol"]


def test_messages_after_the_result_and_unknown_messages_are_flagged_and_dropped() -> None:
    talk = Conversation({"protocol": 1, "kind": "script", "mode": "learner"})
    talk.printed.feed(b"honest")
    talk.receive({"type": "result", "body": {"variables": {}}})
    talk.printed.feed(b"forged")
    talk.receive({"type": "result", "body": {"variables": {}}})
    talk.receive({"type": "hello"})
    talk.receive({"type": "next"})
    capture = finished_capture(talk)
    assert capture["stdout"] == "honest"
    assert kinds(talk) == ["protocol", "protocol", "protocol"]


def test_printed_output_ends_at_each_message_and_nothing_from_a_hidden_case_on_is_shown() -> None:
    cases = [encoded_case(True, 0.0), encoded_case(False, 1.0), encoded_case(True, 2.0)]
    talk = Conversation({"protocol": 1, "kind": "function", "mode": "learner", "cases": cases})
    for printed, message in (
        (b"module ", {"type": "next"}),
        (b"first", case_result(0)),
        (b"between ", {"type": "next"}),
        (b"hidden", case_result(1)),
        (b"", {"type": "next"}),
        (b"after", case_result(2)),
        (b"", {"type": "next"}),
        (b"late", {"type": "result", "body": {}}),
    ):
        talk.printed.feed(printed)
        talk.receive(message)
    capture = finished_capture(talk)
    assert capture["stdout"] == "module "
    shown = [(case["stdout"], case["visible"]) for case in capture["cases"]]
    assert shown == [("first", True), ("hidden", False), ("after", False)]
    assert talk.tamper == []


def test_printed_output_is_cut_at_the_cap_without_splitting_a_character() -> None:
    whole = Output(5)
    whole.feed("abc\u00e9".encode())
    assert whole.take() == ("abc\u00e9", False)
    cut = Output(4)
    cut.feed("abc\u00e9".encode())
    cut.feed(b"more")
    assert cut.take() == ("abc", True)
    cut.feed(b"\xffok")
    assert cut.take() == ("\ufffdok", False)  # the next piece starts whole


def test_tamper_messages_reach_the_capture_even_when_the_run_ends_without_a_result() -> None:
    talk = Conversation({"protocol": 1, "kind": "script", "mode": "learner"})
    talk.receive({"type": "tamper", "kind": "ctypes", "detail": "ctypes.dlopen"})
    talk.receive({"type": "tamper", "kind": "Not A Kind!", "detail": "x"})
    capture = finished_capture(talk)
    assert capture["terminated"]["reason"] == "exit"
    assert capture["tamper"][0] == {"kind": "ctypes", "detail": "ctypes.dlopen"}
    assert capture["tamper"][1]["kind"] == "protocol"


def test_wrongly_typed_fields_are_dropped_and_flagged() -> None:
    talk = Conversation({"protocol": 1, "kind": "script", "mode": "learner"})
    talk.receive({"type": "result", "body": {"optimizer_steps": True, "variables": []}})
    capture = finished_capture(talk)
    assert capture["optimizer_steps"] == 0 and capture["variables"] == {}
    assert kinds(talk) == ["protocol", "protocol"]


def test_the_reader_reassembles_split_messages_and_refuses_oversized_ones() -> None:
    data = channel.encode_message({"type": "next"}) + channel.encode_message({"type": "x"})
    reader = channel.Reader(max_message=100)
    assert reader.feed(data[:3]) == []
    assert [m["type"] for m in reader.feed(data[3:])] == ["next", "x"]
    with pytest.raises(channel.TooLarge, match="over the cap"):  # a failed run, not tampering
        channel.Reader(max_message=10).feed(channel.encode_message({"type": "y" * 20}))
    with pytest.raises(channel.ProtocolError, match="string type"):
        channel.Reader(max_message=100).feed(channel.encode_message({"kind": "no type"}))


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the filter is built for x86-64")
def test_the_child_filter_refuses_signals_to_the_parent_and_raw_writes_to_the_channel() -> None:
    probe = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(HARNESS)!r})
        import confine
        os.dup2(int(sys.argv[1]), 3)
        assert confine.install(os.getppid(), 3)
        results = []
        for attempt in (
            lambda: os.kill(os.getppid(), 0),
            lambda: os.kill(0, 0),
            lambda: os.kill(-1, 0),
            lambda: os.write(3, b"forged"),
            lambda: os.dup(3),
            lambda: os.dup2(1, 3),
        ):
            try:
                attempt()
                results.append("allowed")
            except PermissionError:
                results.append("refused")
        os.kill(os.getpid(), 0)  # its own pid is fine
        os.write(1, (" ".join(results)).encode())
        """
    )
    read_end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", probe, str(write_end)],
            pass_fds=(write_end,),
            capture_output=True,
            timeout=60,
            check=True,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert done.stdout.decode().split() == ["refused"] * 6


def test_submission_seeds_are_reproducible_secret_keyed_and_distinct() -> None:
    secret = (123456789).to_bytes(8, "big")
    seed = submission_seed(secret, "42")
    assert seed == submission_seed(secret, "42")  # a regrade gets the same hidden cases
    assert 0 <= seed < 2**63
    others = {submission_seed(secret, str(n)) for n in range(200)}
    assert len(others) == 200  # each submission gets its own hidden inputs
    assert submission_seed((987654321).to_bytes(8, "big"), "42") != seed
    with pytest.raises(ValueError, match="secret"):
        submission_seed(b"", "42")
