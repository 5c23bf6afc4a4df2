"""The web server's worker class: gunicorn's threaded worker (`gthread`), whose main thread
only accepts connections and waits for them to become readable, so a slow client holds one
thread of many, never a whole process, plus a read timeout on every client socket: a client
that stops sending in the middle of its request line, headers or body loses its thread after
GRADLAB_WEB_READ_TIMEOUT_SECONDS without a byte (gthread alone would wait for ever)."""

from __future__ import annotations

from typing import Any

from gunicorn.workers.gthread import ThreadWorker  # type: ignore[import-untyped,unused-ignore]

from config.env import env_float

READ_TIMEOUT_SECONDS = env_float("GRADLAB_WEB_READ_TIMEOUT_SECONDS", 20.0)


class ReadTimeoutThreadWorker(ThreadWorker):  # type: ignore[misc,unused-ignore]
    def enqueue_req(self, conn: Any) -> None:
        """gthread's own, with the timeout set once the socket is made blocking."""
        conn.init()
        conn.sock.settimeout(READ_TIMEOUT_SECONDS)
        future = self.tpool.submit(self.handle, conn)
        self._wrap_future(future, conn)
