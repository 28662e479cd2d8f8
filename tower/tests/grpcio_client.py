#!/usr/bin/env python3
"""A second gRPC client implementation (Python grpcio) against ritmo-tower's gRPC example server.

Usage: grpcio_client.py 127.0.0.1:PORT
The server (tower/examples/grpc-server.rs) allows 2 calls per 10 s per client IP. Three calls of
grpc.health.v1.Health/Check: the first two pass, the third must fail with RESOURCE_EXHAUSTED
carrying `retry-after`, the RateLimit fields and a google.rpc.RetryInfo detail whose delay is
`retry-after` to the millisecond (never longer than one emission interval, 5 s). The request and
reply are sent as raw bytes (an empty HealthCheckRequest is zero bytes): no generated code.
"""
import math
import sys

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


def main(target: str) -> int:
    channel = grpc.insecure_channel(target)
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )
    for i in range(2):
        check(b"", timeout=10)
    try:
        check(b"", timeout=10)
    except grpc.RpcError as call:
        code = call.code()
        if code != grpc.StatusCode.RESOURCE_EXHAUSTED:
            print(f"third call: {code}, not RESOURCE_EXHAUSTED: {call.details()}")
            return 1
        trailers = dict(call.trailing_metadata() or ())
        status = rpc_status.from_call(call)
        if status is None:
            print("no google.rpc.Status in grpc-status-details-bin")
            return 1
        delays = []
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                delays.append(info.retry_delay.ToTimedelta().total_seconds())
        if len(delays) != 1:
            print(f"expected one RetryInfo detail, got {len(delays)}")
            return 1
        delay = delays[0]
        retry_after = int(trailers.get("retry-after", "-1"))
        if not (0 < delay <= 5.0) or math.ceil(delay) != retry_after:
            print(f"RetryInfo delay {delay} s does not round up to retry-after {retry_after}")
            return 1
        for field in ("ratelimit", "ratelimit-policy"):
            if field not in trailers:
                print(f"no {field} in {trailers}")
                return 1
        print(f"grpcio: RESOURCE_EXHAUSTED, RetryInfo {delay:.3f} s, retry-after {retry_after}, "
              f"ratelimit {trailers['ratelimit']}")
        return 0
    print("the third call passed: no limit")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
