"""A labrun probe --grpc for Python's grpcio (Debian's python3-grpcio; run it with
/usr/bin/python3). It calls LABRUN_GRPC_METHOD on the target LABRUN_URL with the metadata
labrun-fault: LABRUN_GRPC_FAULT and labrun-call: LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at
once on one channel, and exits 0 when every call ended OK.

At its defaults grpcio sets no deadline and no retry policy. PROBE_DEADLINE (seconds) gives
every call a timeout (grpcio sends it as grpc-timeout, in whole milliseconds rounded up);
PROBE_MAX_ATTEMPTS a retry policy for UNAVAILABLE (backoff 0.1 s x2, up to 1 s):

    labrun probe --grpc -- /usr/bin/python3 examples/probes/python/grpcio_probe.py
    PROBE_DEADLINE=1.5 PROBE_MAX_ATTEMPTS=3 labrun probe --grpc --deadline 1.5s --retries 2 -- \\
        /usr/bin/python3 examples/probes/python/grpcio_probe.py
"""
import json
import os
import sys
import threading

import grpc


def main():
    deadline = float(os.environ["PROBE_DEADLINE"]) if os.environ.get("PROBE_DEADLINE") else None
    max_attempts = int(os.environ.get("PROBE_MAX_ATTEMPTS") or "0")

    options = []
    if max_attempts > 1:
        config = {"methodConfig": [{"name": [{"service": "labrun.Fault"}], "retryPolicy": {
            "maxAttempts": max_attempts, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}
        options = [("grpc.service_config", json.dumps(config)), ("grpc.enable_retries", 1)]
    channel = grpc.insecure_channel(os.environ["LABRUN_URL"], options=options)
    method = os.environ.get("LABRUN_GRPC_METHOD", "/labrun.Fault/Call")
    metadata = [("labrun-fault", os.environ.get("LABRUN_GRPC_FAULT", "")),
                ("labrun-call", os.environ.get("LABRUN_GRPC_CALL", ""))]
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
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
