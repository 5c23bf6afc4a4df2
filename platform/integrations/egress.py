"""HTTP to addresses chosen by users (webhook endpoints) without reaching inside our own
network: the check is made on the address the socket actually connected to, so a name
that resolves to a public address when checked and to a private one when used (DNS
rebinding) is refused too. Environment proxies are ignored (the peer must be the host)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import requests  # type: ignore[import-untyped,unused-ignore]
from requests.adapters import HTTPAdapter  # type: ignore[import-untyped,unused-ignore]
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool


class RefusedHost(Exception):
    """The endpoint's host is (or resolved to) an address we do not send to."""


def refuse_private(sock: socket.socket, host: str) -> None:
    address = ipaddress.ip_address(sock.getpeername()[0])
    if not address.is_global:
        sock.close()
        raise RefusedHost(f"{host} resolves to a non-public address {address}")


class _PublicHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        refuse_private(sock, self.host)
        return sock


class _PublicHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        refuse_private(sock, self.host)
        return sock


class _PublicHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _PublicHTTPConnection


class _PublicHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _PublicHTTPSConnection


class PublicOnlyAdapter(HTTPAdapter):  # type: ignore[misc,unused-ignore]
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _PublicHTTPConnectionPool,
            "https": _PublicHTTPSConnectionPool,
        }


def session(*, allow_private: bool) -> requests.Session:
    """A session for user-chosen URLs: public addresses only unless `allow_private`."""
    client = requests.Session()
    client.trust_env = False
    if not allow_private:
        adapter = PublicOnlyAdapter()
        client.mount("http://", adapter)
        client.mount("https://", adapter)
    return client
