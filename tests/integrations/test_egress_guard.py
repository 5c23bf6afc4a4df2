"""The egress guard's rules on their own (integrations.egress): which addresses count as
public, which URLs a policy lets through, and that a name is refused on what it resolves to
before any socket connects. Its use by webhooks is in test_webhooks.py, by the LTI services
in tests/lti/test_egress.py."""

from __future__ import annotations

import socket

import pytest

from integrations import egress


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
     "0.0.0.0", "::1", "fc00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
     "224.0.0.1"],
)  # fmt: skip
def test_internal_loopback_link_local_and_private_addresses_are_not_public(address: str) -> None:
    assert not egress.public(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_internet_addresses_are_public(address: str) -> None:
    assert egress.public(address)


PLATFORM = egress.Policy(origins=frozenset({"https://lms.example.test:443"}))


@pytest.mark.parametrize(
    "url",
    [
        "http://lms.example.test/scores",  # plain http
        "ftp://lms.example.test/scores",
        "https://user:pw@lms.example.test/scores",
        "https://lms.example.test:8443/scores",  # another port of the platform's host
        "https://evil.example.test/scores",
        "https://lms.example.test.evil.test/scores",
        "https:///scores",
    ],
)
def test_a_url_off_the_policy_is_refused_before_any_network_use(url: str) -> None:
    with pytest.raises(egress.Refused):
        egress.url_check(url, PLATFORM)


def test_a_url_on_an_allowed_origin_passes_whatever_its_spelling() -> None:
    egress.url_check("HTTPS://LMS.example.test:443/api/lti/courses/1?x=1", PLATFORM)


def test_plain_http_passes_only_for_an_insecure_host_the_operator_named() -> None:
    rules = egress.Policy(insecure_hosts=frozenset({"127.0.0.1"}))

    egress.url_check("http://127.0.0.1:9000/hook", rules)
    with pytest.raises(egress.Refused):
        egress.url_check("http://localhost:9000/hook", rules)


def test_a_name_is_judged_by_every_address_it_resolves_to() -> None:
    with pytest.raises(egress._RefusedAddress):
        egress.checked_addresses("localhost", 443, egress.Policy())


def test_an_insecure_host_may_resolve_to_a_private_address() -> None:
    rules = egress.Policy(insecure_hosts=frozenset({"127.0.0.1"}))

    assert egress.checked_addresses("127.0.0.1", 80, rules) == ["127.0.0.1"]


def test_a_refused_address_gets_no_connection() -> None:
    """The guard resolves and checks before it connects: a listening loopback port
    accepts nothing (the earlier guard connected, then looked at the peer)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        with pytest.raises(egress.Refused), egress.session(egress.Policy()) as client:
            client.get(f"https://localhost:{port}/")
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_every_failure_without_an_answer_reads_the_same() -> None:
    import requests

    failures = [
        egress.Refused("10.0.0.1 is private"),
        requests.ConnectionError("connection refused"),
        requests.ConnectTimeout("timed out"),
        requests.ReadTimeout("read timed out"),
    ]

    assert {egress.failure_text(f) for f in failures} == {egress.NOT_SENT}
