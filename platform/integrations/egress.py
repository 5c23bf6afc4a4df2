"""The one guard of every request gradlab makes to a URL that came from outside (webhook
endpoints, an LMS's service URLs and `Link` headers, its key set and token endpoint).

Before any byte leaves, in this order:
1. the URL: https (plain http only to GRADLAB_EGRESS_INSECURE_HOSTS, or where the caller's
   policy allows it), no credentials in it, and, when the policy names origins, one of them;
2. the address: the host name is resolved once, every address it resolves to must be
   public (unless the host is one of GRADLAB_EGRESS_INSECURE_HOSTS or the policy allows
   private addresses), and the socket connects to one of those checked addresses (pinned:
   a name that resolves to a public address when checked and to a private one when used,
   DNS rebinding, never reaches the private one), with the name kept for Host and TLS SNI;
3. no redirect is followed, environment proxies are ignored (the peer must be the host),
   and every request has a timeout.

A refused URL or address, a closed port, a timeout and a reset all read the same to whoever
sees the error (`failure_text`): the answer does not tell an open port from a closed one.
The detail goes to the worker's log."""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from requests.adapters import HTTPAdapter  # type: ignore[import-untyped,unused-ignore]
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util import connection

logger = logging.getLogger(__name__)

# The one text of every request that got no HTTP answer, refused here or by the network.
NOT_SENT = "Not sent: the address is not allowed, or it did not answer."
DEFAULT_PORTS = {"http": 80, "https": 443}


class Refused(requests.ConnectionError):  # type: ignore[misc,unused-ignore]
    """The URL or the address it resolved to is one we do not send to."""


# The name of the webhooks' earlier guard.
RefusedHost = Refused


class _RefusedAddress(Exception):
    """Raised inside urllib3 (which would wrap an OSError), turned into Refused."""


@dataclass(frozen=True)
class Policy:
    """Where a request may go. `origins`: "scheme://host:port" strings (None: any);
    `insecure_hosts`: hosts that may be reached over http and at private addresses (tests,
    a development LMS); `allow_http`, `allow_private`: the same for every host."""

    origins: frozenset[str] | None = None
    insecure_hosts: frozenset[str] = frozenset()
    allow_http: bool = False
    allow_private: bool = False
    timeout: float = 10.0

    def private_ok(self, host: str) -> bool:
        return self.allow_private or host.lower() in self.insecure_hosts


def policy(
    *,
    origins: frozenset[str] | None = None,
    allow_http: bool = False,
    allow_private: bool = False,
    timeout: float = 10.0,
) -> Policy:
    """A policy with the operator's GRADLAB_EGRESS_INSECURE_HOSTS."""
    insecure = frozenset(h.lower() for h in settings.GRADLAB_EGRESS_INSECURE_HOSTS)
    return Policy(
        origins=origins, insecure_hosts=insecure, allow_http=allow_http,
        allow_private=allow_private, timeout=timeout,
    )  # fmt: skip


def origin_of(url: str) -> str:
    """`scheme://host:port` of a URL, lower-cased, the port explicit ("" when none)."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return ""
    if not parts.hostname or port is None:
        return ""
    return f"{parts.scheme.lower()}://{parts.hostname.lower()}:{port}"


def url_check(url: str, rules: Policy) -> None:
    """Raises Refused unless `url` may be requested under `rules` (no network use)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        raise Refused(f"{url!r} is not a URL") from None
    host = (parts.hostname or "").lower()
    scheme = parts.scheme.lower()
    http_ok = rules.allow_http or host in rules.insecure_hosts
    if not host or scheme not in (("https", "http") if http_ok else ("https",)):
        raise Refused(f"{url!r}: only https to a named host")
    if parts.username or parts.password:
        raise Refused(f"{url!r}: credentials in the URL")
    if rules.origins is not None and origin_of(url) not in rules.origins:
        raise Refused(f"{url!r} is not on an allowed origin ({sorted(rules.origins)})")


def public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def checked_addresses(host: str, port: int, rules: Policy) -> list[str]:
    """The addresses `host` resolves to, all of them public unless `rules` allow private
    ones for it; raises _RefusedAddress otherwise, before any connection is made."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise _RefusedAddress(f"{host} does not resolve: {error}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise _RefusedAddress(f"{host} resolves to no address")
    if not rules.private_ok(host):
        private = [a for a in addresses if not public(a)]
        if private:
            raise _RefusedAddress(f"{host} resolves to a non-public address {private[0]}")
    return addresses


def _connect_pinned(conn: HTTPConnection, rules: Policy) -> socket.socket:
    """Connects to one of the checked addresses of `conn.host` (urllib3's _new_conn, with
    the resolution done here); Host and SNI keep the name."""
    last: Exception | None = None
    for address in checked_addresses(conn.host, conn.port, rules):
        try:
            return connection.create_connection(
                (address, conn.port), conn.timeout,
                source_address=conn.source_address, socket_options=conn.socket_options,
            )  # fmt: skip
        except TimeoutError as error:
            last = ConnectTimeoutError(conn, f"Connection to {conn.host} timed out.")
            last.__cause__ = error
        except OSError as error:
            last = NewConnectionError(conn, f"Failed to establish a new connection: {error}")
    assert last is not None
    raise last


@functools.cache
def _pools(rules: Policy) -> dict[str, type[HTTPConnectionPool]]:
    """urllib3 pool classes whose connections connect only through the guard."""

    class Pinned(HTTPConnection):
        def _new_conn(self) -> socket.socket:
            return _connect_pinned(self, rules)

    class PinnedTLS(HTTPSConnection):
        def _new_conn(self) -> socket.socket:
            return _connect_pinned(self, rules)

    class Pool(HTTPConnectionPool):
        ConnectionCls = Pinned

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = PinnedTLS

    return {"http": Pool, "https": TLSPool}


class GuardedAdapter(HTTPAdapter):  # type: ignore[misc,unused-ignore]
    def __init__(self, rules: Policy) -> None:
        self.rules = rules
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pools(self.rules)


class GuardedSession(requests.Session):  # type: ignore[misc,unused-ignore]
    """A requests session under a Policy: URL checked before sending, addresses checked
    and pinned at connect time, redirects never followed, a timeout always."""

    def __init__(self, rules: Policy) -> None:
        super().__init__()
        self.rules = rules
        self.trust_env = False
        adapter = GuardedAdapter(rules)
        self.mount("http://", adapter)
        self.mount("https://", adapter)

    def request(  # type: ignore[override,unused-ignore]
        self, method: str, url: str, *args: Any, **kwargs: Any
    ) -> requests.Response:
        kwargs["allow_redirects"] = False
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self.rules.timeout
        return super().request(method, url, *args, **kwargs)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        kwargs["allow_redirects"] = False
        url_check(str(request.url), self.rules)
        try:
            return super().send(request, **kwargs)
        except _RefusedAddress as refused:
            raise Refused(str(refused), request=request) from None


def session(rules: Policy) -> GuardedSession:
    return GuardedSession(rules)


def answered(response: requests.Response) -> bool:
    """A 2xx: a redirect (never followed) is not an answer."""
    return 200 <= int(response.status_code) < 300


def failure_text(error: BaseException) -> str:
    """What a caller records of a failed request: the one neutral text when no HTTP answer
    came (refused here, closed port, timeout, reset, TLS), the error otherwise. The detail
    is logged."""
    logger.info("outgoing request failed: %s: %s", type(error).__name__, error)
    if isinstance(error, requests.ConnectionError | requests.Timeout):
        return NOT_SENT
    return f"{type(error).__name__}: {error}"[:500]
