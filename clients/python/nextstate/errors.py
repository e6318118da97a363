"""Exceptions of the nextstate client.

A server error arrives as a JSON-RPC error object ``{code, message, data}``
(docs/protocol.md, "Errors"); :func:`error_from_wire` turns it into the
subclass of :class:`RPCError` for its code, so callers catch what they mean::

    try:
        await session.step(text_action("50"))
    except BadActionError as e:
        print(e.problems)          # where the action failed its schema
    except EpisodeOverError:
        await session.reset(seed=8)

Every :class:`RPCError` keeps the wire ``code``, ``message`` and ``data``. A
code this client does not know becomes a plain :class:`RPCError`. Errors of
``session.step`` carry ``session`` and ``step_id``, so a step whose outcome is
unknown can be retried under the same id.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional


class NextstateError(Exception):
    """The base of every error this package raises.

    ``session`` and ``step_id`` are set on errors of ``session.step`` (the
    step id to retry with); they are ``None`` otherwise.
    """

    session: Optional[str] = None
    step_id: Optional[str] = None


class ClientClosedError(NextstateError):
    """A call on a client that was closed, or cut off by its close."""


class ConnectionLostError(NextstateError):
    """The connection dropped and the call could not be carried over.

    With reconnecting off every call in flight gets it. With reconnecting on,
    a call that is not safe to send twice (``session.create``,
    ``session.reset``, ``reward.add``, a step without a step id) and that had
    already been written gets it: its outcome is unknown (``outcome_unknown``
    is then true), and ``session.resume`` shows whether it happened. It is
    also the error of every call once the client gave up redialing.
    """

    def __init__(self, message: str, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


class RPCError(NextstateError):
    """An error answer of the server: the JSON-RPC ``code``, its ``message``
    (for people; do not parse it) and ``data`` (a dict, possibly empty)."""

    code: int = 0

    def __init__(self, code: int, message: str, data: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data: dict[str, Any] = dict(data or {})

    @property
    def retry_after(self) -> Optional[float]:
        """Seconds to wait before retrying (``data.retry_after_ms``), if given."""
        ms = self.data.get("retry_after_ms")
        return None if ms is None else float(ms) / 1000.0

    @property
    def failure(self) -> Optional[dict[str, Any]]:
        """The failure ``{fault, reason, message}`` of a ``-32012`` error."""
        return self.data.get("failure")

    @property
    def problems(self) -> list[str]:
        """Where an action failed its schema (``-32004``), one entry a place."""
        return list(self.data.get("problems") or [])

    @property
    def accepted(self) -> list[str]:
        """The values that would have been accepted (``-32002``, ``-32601``)."""
        return list(self.data.get("accepted") or [])


class ParseError(RPCError):
    """-32700: the server could not read a frame as JSON."""


class InvalidRequestError(RPCError):
    """-32600: not a JSON-RPC 2.0 request object."""


class MethodNotFoundError(RPCError):
    """-32601: an unknown method; ``accepted`` lists the methods."""


class InvalidParamsError(RPCError):
    """-32602: params of a wrong type, an unknown field, a missing field."""


class InternalError(RPCError):
    """-32603: a server bug (a handler panicked)."""


class UnknownSessionError(RPCError):
    """-32001: the session was never created, or it is closed."""


class UnknownEnvError(RPCError):
    """-32002: no such env kind; ``accepted`` lists the registered ones."""


class UnknownTaskError(RPCError):
    """-32003: no such task id in the catalog (or not of the given env)."""


class BadActionError(RPCError):
    """-32004: the action does not match the kind's schema; no step is used."""


class OverCapacityError(RPCError):
    """-32005: the server is at its session cap; retry after ``retry_after``."""


class SessionClosedError(RPCError):
    """-32006: the session was closed while or before the request ran."""


class EpisodeOverError(RPCError):
    """-32007: the episode terminated or was truncated; reset first."""


class StepIDReusedError(RPCError):
    """-32008: the step id was used for a different action in this session."""


class ShuttingDownError(RPCError):
    """-32009: the server is draining; retry after ``retry_after``."""


class UnauthorizedError(RPCError):
    """-32010: a missing or wrong bearer token."""


class FrameTooLargeError(RPCError):
    """-32011: a frame over ``max_frame_bytes``."""


class InfraError(RPCError):
    """-32012: the env or the store failed; ``failure`` says how and whose fault."""


class SlowConsumerError(RPCError):
    """-32013: reserved by the protocol."""


class BadRequestError(RPCError):
    """-32014: well-formed, but cannot be served as asked."""


class UnknownSubscriptionError(RPCError):
    """-32015: a subscription this connection does not have."""


_BY_CODE: dict[int, type[RPCError]] = {
    -32700: ParseError,
    -32600: InvalidRequestError,
    -32601: MethodNotFoundError,
    -32602: InvalidParamsError,
    -32603: InternalError,
    -32001: UnknownSessionError,
    -32002: UnknownEnvError,
    -32003: UnknownTaskError,
    -32004: BadActionError,
    -32005: OverCapacityError,
    -32006: SessionClosedError,
    -32007: EpisodeOverError,
    -32008: StepIDReusedError,
    -32009: ShuttingDownError,
    -32010: UnauthorizedError,
    -32011: FrameTooLargeError,
    -32012: InfraError,
    -32013: SlowConsumerError,
    -32014: BadRequestError,
    -32015: UnknownSubscriptionError,
}


def error_from_wire(obj: Any) -> RPCError:
    """Turns a JSON-RPC error object into the :class:`RPCError` of its code.

    ``obj`` is the ``error`` member of a response (a dict with ``code``,
    ``message`` and optionally ``data``). Anything else gives an
    :class:`RPCError` with code 0 that says what arrived.
    """
    if not isinstance(obj, Mapping) or not isinstance(obj.get("code"), int):
        return RPCError(0, f"malformed error object from the server: {obj!r}")
    code = int(obj["code"])
    data = obj.get("data")
    cls = _BY_CODE.get(code, RPCError)
    return cls(code, str(obj.get("message", "")), data if isinstance(data, Mapping) else None)


# Codes whose cause does not go away by retrying a subscribe.
TERMINAL_CODES = frozenset({-32600, -32601, -32602, -32014, -32010, -32011})
