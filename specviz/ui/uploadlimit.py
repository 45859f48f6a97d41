"""A per-visitor limit on uploads (public mode): Gradio's ``/gradio_api/upload`` takes files before
any event of the app sees them, so no handler can refuse them; this ASGI middleware, installed on the
app ``launch`` creates (``launch_kwargs``: FastAPI's ``middleware``), counts each visitor's upload
requests and their bytes over a sliding minute and answers HTTP 429 with a sentence over either.

A visitor here is the client's IP address as the server sees it (``scope["client"]``; uvicorn puts the
forwarded address there when the connection comes from a proxy it trusts: ``FORWARDED_ALLOW_IPS``,
loopback by default). Not Gradio's session hash: the upload request carries none. Behind a proxy uvicorn
does not trust, every visitor has the proxy's address and the limit counts them together
(docs/hosting.md). Bytes are the request's declared ``Content-Length``, counted before the body is read;
a request without one is refused (411)."""

from __future__ import annotations

import math
import time
from typing import Any, Awaitable, Callable, MutableMapping

from specviz.ui.ratelimit import SlidingWindow, seconds

UPLOAD_PATH = "/gradio_api/upload"
DRAIN_MAX = 64 * 1024 * 1024  # a refused body is read (and dropped) up to this, so the client sees the answer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class UploadLimiter:
    """``allow(address, size)``: None if this address may upload ``size`` bytes now (and it is counted),
    else the sentence refusing it and the seconds to wait (None: never, the upload is too large)."""

    def __init__(
        self, per_minute: int | None, bytes_per_minute: int | None, clock: Callable[[], float] = time.monotonic
    ):
        self.per_minute, self.bytes_per_minute = per_minute, bytes_per_minute
        self.window = SlidingWindow([per_minute, bytes_per_minute], clock)

    @property
    def active(self) -> bool:
        return self.per_minute is not None or self.bytes_per_minute is not None

    def allow(self, address: str, size: int) -> tuple[str, int | None] | None:
        wait = self.window.charge(address, [1, size])
        if wait is None:
            return None
        if math.isinf(wait):
            return (
                f"This upload is {size / 2**20:.1f} MB; this app takes at most {self.describe()} from one address.",
                None,
            )
        return (
            f"This app takes at most {self.describe()} from one address; try again in {seconds(wait)} s.",
            seconds(wait),
        )

    def describe(self) -> str:
        parts = []
        if self.per_minute is not None:
            parts.append(f"{self.per_minute} uploads")
        if self.bytes_per_minute is not None:
            parts.append(f"{self.bytes_per_minute / 2**20:g} MB")
        return " and ".join(parts) + " a minute"


def is_upload(scope: Scope) -> bool:
    return (
        scope.get("type") == "http"
        and scope.get("method") == "POST"
        and str(scope.get("path", "")).rstrip("/").endswith(UPLOAD_PATH)
    )


def content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


class UploadLimitMiddleware:
    """ASGI middleware: uploads over ``limiter``'s limits get 429 (411 without a Content-Length);
    every other request passes untouched."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], limiter: UploadLimiter):
        self.app, self.limiter = app, limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.limiter.active or not is_upload(scope):
            await self.app(scope, receive, send)
            return
        size = content_length(scope)
        if size is None:
            await refuse(receive, send, 411, "An upload must state its size (a Content-Length header).")
            return
        client = scope.get("client")
        address = str(client[0]) if client else "unknown"
        refusal = self.limiter.allow(address, size)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        text, wait = refusal
        await refuse(receive, send, 429, text, [] if wait is None else [(b"retry-after", str(wait).encode())])


async def refuse(
    receive: Receive, send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Read and drop the request's body (up to ``DRAIN_MAX``; a client still sending would otherwise see
    the connection reset instead of the answer), then answer ``status`` with ``text``."""
    read = 0
    while read <= DRAIN_MAX:
        message = await receive()
        if message.get("type") != "http.request":
            break
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
