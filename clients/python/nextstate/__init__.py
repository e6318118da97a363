"""the Python client of a nextstate server.

* :mod:`nextstate.client`: :class:`Client` and :class:`Session`, the
  protocol ``nextstate.v1`` (JSON-RPC 2.0 over WebSocket at ``/v1/ws``; see
  docs/protocol.md) with reconnects, step-id retries and subscriptions.
* :mod:`nextstate.samples`: :class:`SampleStream`, the training-sample
  stream (at-least-once, acknowledged, resumable), and the HTTP pull.
* :mod:`nextstate.slime_adapter`: a slime ``--rollout-function-path`` that
  trains on the stream's samples; :mod:`nextstate.opd` scores its turns
  under an OPD teacher, :mod:`nextstate.chat` tokenizes text-only turns.

Needs the standard library and ``websockets`` (Debian: python3-websockets).
"""

import logging

from .client import PROTOCOL, Client, ReconnectPolicy, ws_url
from .errors import (
    BadActionError,
    BadRequestError,
    ClientClosedError,
    ConnectionLostError,
    EpisodeOverError,
    InfraError,
    InvalidParamsError,
    MethodNotFoundError,
    NextstateError,
    OverCapacityError,
    RPCError,
    SessionClosedError,
    ShuttingDownError,
    StepIDReusedError,
    UnauthorizedError,
    UnknownEnvError,
    UnknownSessionError,
    UnknownSubscriptionError,
    UnknownTaskError,
    error_from_wire,
)
from .samples import SampleRecord, SampleStream, fetch_samples, iter_samples_http
from .session import Session
from .subscription import Subscription
from .wire import (
    ResetResult,
    ResumeResult,
    StepResult,
    observation_text,
    text_action,
    tool_call_action,
    tool_calls_action,
)

__version__ = "0.1.0"

# A library logs to "nextstate" and leaves the handlers to the application.
logging.getLogger("nextstate").addHandler(logging.NullHandler())

__all__ = [
    "PROTOCOL", "Client", "ReconnectPolicy", "Session", "ws_url", "Subscription",
    "SampleRecord", "SampleStream", "fetch_samples", "iter_samples_http",
    "ResetResult", "ResumeResult", "StepResult", "observation_text", "text_action", "tool_call_action",
    "tool_calls_action", "error_from_wire",
    "NextstateError", "RPCError", "ClientClosedError", "ConnectionLostError", "BadActionError",
    "BadRequestError", "EpisodeOverError", "InfraError", "InvalidParamsError", "MethodNotFoundError",
    "OverCapacityError", "SessionClosedError", "ShuttingDownError", "StepIDReusedError", "UnauthorizedError",
    "UnknownEnvError", "UnknownSessionError", "UnknownSubscriptionError", "UnknownTaskError",
]
