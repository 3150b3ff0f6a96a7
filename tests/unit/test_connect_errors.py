"""Which Spark Connect errors say the server is gone (`adapters.spark.session.unreachable`).

A server's own answer (a cast that failed on an event, under ANSI rules) is raised by pyspark `from None`
inside its handler of the gRPC error: it must stay a filter failure, not turn into "the engine stopped
answering" (exit 6), or a failing filter would never mark its connection failed on a managed engine.
"""

from __future__ import annotations

import grpc
import pytest
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from replctl.adapters.spark.session import unreachable


class _RpcError(grpc.RpcError):  # type: ignore[misc]  # grpc ships no types
    """A transport error as grpc raises it (its class lives in a grpc module)."""


_RpcError.__module__ = "grpc._channel"


def _answered_inside_the_rpc_handler(answer: Exception) -> Exception:
    try:
        try:
            raise _RpcError("status INTERNAL")
        except _RpcError:
            raise answer from None
    except Exception as raised:
        return raised
    raise AssertionError("unreachable code")


def test_a_server_answer_raised_from_none_inside_the_rpc_handler_is_no_server_gone() -> None:
    answer = SparkConnectGrpcException(
        message="[CAST_INVALID_INPUT] 'abc' cannot be cast", grpc_status_code=grpc.StatusCode.INTERNAL
    )
    assert not unreachable(_answered_inside_the_rpc_handler(answer))


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED])
def test_a_call_the_server_never_answered_is_a_server_gone(code: grpc.StatusCode) -> None:
    gone = SparkConnectGrpcException(message="<_InactiveRpcError ...>", grpc_status_code=code)
    assert unreachable(_answered_inside_the_rpc_handler(gone))


def test_a_grpc_error_itself_or_as_a_cause_is_a_server_gone() -> None:
    assert unreachable(_RpcError("socket closed"))
    try:
        try:
            raise _RpcError("socket closed")
        except _RpcError as transport:
            raise RuntimeError("the pass failed") from transport
    except RuntimeError as wrapped:
        assert unreachable(wrapped)
