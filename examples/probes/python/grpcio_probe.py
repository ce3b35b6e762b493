"""A labrun probe --grpc for Python's grpcio (Debian's python3-grpcio; run it with
/usr/bin/python3). It calls LABRUN_GRPC_METHOD on the target LABRUN_URL with the metadata
labrun-fault: LABRUN_GRPC_FAULT and labrun-call: LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at
once on one channel, and exits 0 when every call ended OK.

At its defaults grpcio sets no deadline and no retry policy. --deadline SECONDS gives every
call a timeout (grpcio sends it as grpc-timeout, in whole milliseconds rounded up);
--max-attempts N a retry policy for UNAVAILABLE (backoff 0.1 s x2, up to 1 s):

    labrun probe --grpc -- /usr/bin/python3 examples/probes/python/grpcio_probe.py
    labrun probe --grpc --deadline 1.5s --retries 2 -- \\
        /usr/bin/python3 examples/probes/python/grpcio_probe.py --deadline 1.5 --max-attempts 3
"""
import argparse
import json
import os
import sys
import threading

import grpc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deadline", type=float, default=None, help="seconds; none by default")
    ap.add_argument("--max-attempts", type=int, default=0, help="the retry policy's maxAttempts; none by default")
    args = ap.parse_args()

    options = []
    if args.max_attempts > 1:
        config = {"methodConfig": [{"name": [{"service": "labrun.Fault"}], "retryPolicy": {
            "maxAttempts": args.max_attempts, "initialBackoff": "0.1s", "maxBackoff": "1s",
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
                for _ in channel.unary_stream(method)(b"", timeout=args.deadline, metadata=metadata):
                    pass
            else:
                channel.unary_unary(method)(b"", timeout=args.deadline, metadata=metadata)
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
