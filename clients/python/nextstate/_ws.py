"""The WebSocket layer: the ``websockets`` library's asyncio client, in both
of its APIs (the legacy one of versions 10 to 13, which Debian bookworm's
python3-websockets 10.4 has, and ``websockets.asyncio`` of 13 and later)."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any, Mapping, Optional

import websockets

from .errors import NextstateError, RPCError, UnauthorizedError, error_from_wire

try:  # websockets >= 13
    from websockets.asyncio.client import connect as _connect  # type: ignore[import-not-found]

    _HEADERS_ARG = "additional_headers"
except ImportError:  # websockets 10 to 12
    from websockets.client import connect as _connect  # type: ignore[no-redef]

    _HEADERS_ARG = "extra_headers"

if _HEADERS_ARG not in inspect.signature(_connect.__init__).parameters:  # pragma: no cover - odd versions
    _HEADERS_ARG = "extra_headers"


class ProtocolMismatchError(NextstateError):
    """The server did not select the ``nextstate.v1`` subprotocol."""


async def connect(url: str, *, headers: Mapping[str, str], subprotocol: str, open_timeout: float,
                  ping_interval: Optional[float], max_size: int) -> Any:
    """Dials ``url`` and returns the connection; raises an error that
    :func:`permanent` classifies."""
    kw: dict[str, Any] = {
        _HEADERS_ARG: dict(headers),
        "subprotocols": [subprotocol],
        "open_timeout": open_timeout,
        "ping_interval": ping_interval,
        "ping_timeout": None if ping_interval is None else 2 * ping_interval,
        "max_size": max_size,
        "compression": None,
    }
    try:
        ws = await _connect(url, **kw)
    except Exception as e:  # noqa: BLE001 - mapped below, or passed on
        mapped = _handshake_error(url, e)
        if mapped is not None:
            raise mapped from e
        raise
    if ws.subprotocol != subprotocol:
        await close(ws)
        err = ProtocolMismatchError(
            f"{url} does not speak protocol {subprotocol} (it chose subprotocol {ws.subprotocol!r})")
        err._nextstate_permanent = True  # type: ignore[attr-defined]
        raise err
    return ws


def _handshake_error(url: str, e: BaseException) -> Optional[NextstateError]:
    """Maps a refused handshake to the server's error, which it writes as
    ``{"error": {...}}`` with the code's HTTP status."""
    status: Optional[int] = None
    body: bytes = b""
    if hasattr(e, "status_code"):  # legacy InvalidStatusCode
        status = int(getattr(e, "status_code"))
    resp = getattr(e, "response", None)
    if resp is not None and hasattr(resp, "status_code"):  # websockets >= 13 InvalidStatus
        status = int(resp.status_code)
        body = getattr(resp, "body", b"") or b""
    if status is None:
        return None
    err: NextstateError
    try:
        obj = json.loads(body.decode() or "null")
    except (UnicodeDecodeError, ValueError):
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        err = error_from_wire(obj["error"])
    elif status == 401:
        err = UnauthorizedError(-32010, f"dialing {url}: HTTP 401: missing or wrong bearer token")
    else:
        err = RPCError(0, f"dialing {url}: the server refused the WebSocket upgrade with HTTP {status}")
    err._nextstate_permanent = 400 <= status < 500 and status not in (408, 429)  # type: ignore[attr-defined]
    return err


def permanent(e: BaseException) -> bool:
    """Whether dialing again will not help (a wrong token, a wrong path, a
    server that does not speak the protocol)."""
    if isinstance(e, websockets.exceptions.InvalidURI):
        return True
    return bool(getattr(e, "_nextstate_permanent", False))


async def close(ws: Any) -> None:
    """Closes ``ws`` with 1000, waiting at most 2 s for the server."""
    try:
        await asyncio.wait_for(ws.close(code=1000, reason="client closed"), 2)
    except Exception:  # noqa: BLE001 - closing is best effort
        await abort(ws)


async def abort(ws: Any) -> None:
    """Drops ``ws`` at once, without a close handshake."""
    t = getattr(ws, "transport", None)
    if t is not None:
        t.abort()
    try:
        await asyncio.wait_for(ws.wait_closed(), 1)
    except Exception:  # noqa: BLE001 - it is gone either way
        pass
