"""A labrun probe --grpc for Python's grpcio (Debian's python3-grpcio; run it with
/usr/bin/python3). It calls LABRUN_GRPC_METHOD on the target LABRUN_URL with the metadata
labrun-fault: LABRUN_GRPC_FAULT and labrun-call: LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at
once on one channel, and exits 0 when every call ended OK.

At its defaults grpcio sets no deadline and no retry policy. PROBE_DEADLINE (seconds) gives
every call a timeout (grpcio sends it as grpc-timeout rounded up to 3 significant digits:
1510m for 1.5 s on a warm channel; labrun probe --grpc --expect grpcio);
PROBE_MAX_ATTEMPTS a retry policy for UNAVAILABLE (backoff 0.1 s x2, up to 1 s):

With LABRUN_GRPC_HOP (seconds) it is a chain's middle hop: its own grpcio server (B) gets the
call, works that long, and makes the call to the target (C) from the handler. grpcio passes no
deadline down by itself: a call's deadline is its own timeout argument, or none (grpc/_channel.py
_determine_deadline; the parent deadline it asks cygrpc.get_deadline_from_context for is None in
grpcio's own build, grpc/_cython/_cygrpc/_hooks.pyx.pxi). PROBE_PROPAGATE=1 passes what is left
by hand, timeout=context.time_remaining().

    labrun probe --grpc -- /usr/bin/python3 examples/probes/python/grpcio_probe.py
    PROBE_DEADLINE=1.5 PROBE_MAX_ATTEMPTS=3 labrun probe --grpc --deadline 1.5s --retries 2 -- \\
        /usr/bin/python3 examples/probes/python/grpcio_probe.py
"""
import json
import os
import sys
import threading
import time
from concurrent import futures

import grpc


def serve_hop(target, method, hop, metadata, propagate):
    """Starts the chain's middle hop B on loopback and returns it and its address."""
    downstream = grpc.insecure_channel(target)

    def handle(request, context):
        time.sleep(hop)
        timeout = context.time_remaining() if propagate else None
        try:
            return downstream.unary_unary(method)(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as e:
            context.abort(e.code(), e.details() or "")

    class Handler(grpc.GenericRpcHandler):
        def service(self, handler_call_details):
            return grpc.unary_unary_rpc_method_handler(handle)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[Handler()])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def main():
    deadline = float(os.environ["PROBE_DEADLINE"]) if os.environ.get("PROBE_DEADLINE") else None
    max_attempts = int(os.environ.get("PROBE_MAX_ATTEMPTS") or "0")

    options = []
    if max_attempts > 1:
        config = {"methodConfig": [{"name": [{"service": "labrun.Fault"}], "retryPolicy": {
            "maxAttempts": max_attempts, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}
        options = [("grpc.service_config", json.dumps(config)), ("grpc.enable_retries", 1)]
    method = os.environ.get("LABRUN_GRPC_METHOD", "/labrun.Fault/Call")
    metadata = [("labrun-fault", os.environ.get("LABRUN_GRPC_FAULT", "")),
                ("labrun-call", os.environ.get("LABRUN_GRPC_CALL", ""))]
    target, hop_server = os.environ["LABRUN_URL"], None
    if os.environ.get("LABRUN_GRPC_HOP"):
        hop_server, target = serve_hop(target, method, float(os.environ["LABRUN_GRPC_HOP"]), metadata,
                                       os.environ.get("PROBE_PROPAGATE") == "1")
    channel = grpc.insecure_channel(target, options=options)
    failed = []

    def one(n):
        try:
            if method.endswith("/Stream"):
                for _ in channel.unary_stream(method)(b"", timeout=deadline, metadata=metadata):
                    pass
            else:
                channel.unary_unary(method)(b"", timeout=deadline, metadata=metadata)
        except grpc.RpcError as e:
            print(f"call {n}: {e.code()}", file=sys.stderr)
            failed.append(n)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(int(os.environ.get("LABRUN_CONCURRENCY", "1")))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    channel.close()
    if hop_server is not None:
        hop_server.stop(grace=10).wait()  # a hop outlives its caller's giving up: B's handler ends first
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
