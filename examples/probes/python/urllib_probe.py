"""A labrun probe for Python's urllib.request: labrun probe -- python3 examples/probes/python/urllib_probe.py

Every call is a urlopen (urllib keeps no pool: one connection per call). LABRUN_CONCURRENCY
threads each make LABRUN_CALLS calls in sequence, LABRUN_PAUSE seconds apart. It exits 0 when
every call got a 2xx answer and prints a report line per call.

Configure by environment:
  PROBE_TIMEOUT   urlopen's timeout, seconds (the socket's: it bounds the connect and every
                  read, not the call); unset: none
  PROBE_RETRIES   calls made again after a failure (urllib retries nothing itself); default 0
"""
import os
import sys
import threading
import time
import urllib.error
import urllib.request

url = os.environ["LABRUN_URL"]
method = os.environ.get("LABRUN_METHOD", "GET")
calls = int(os.environ.get("LABRUN_CALLS", "1"))
concurrency = int(os.environ.get("LABRUN_CONCURRENCY", "1"))
pause = float(os.environ.get("LABRUN_PAUSE", "0"))
timeout = float(os.environ["PROBE_TIMEOUT"]) if os.environ.get("PROBE_TIMEOUT") else None
retries = int(os.environ.get("PROBE_RETRIES", "0"))
failed = []
lock = threading.Lock()


def call(n):
    start = time.monotonic()
    ok = False
    for _ in range(retries + 1):
        data = b"labrun" if method == "POST" else None
        req = urllib.request.Request(url, data=data, method=method)
        try:
            kw = {} if timeout is None else {"timeout": timeout}
            with urllib.request.urlopen(req, **kw) as resp:
                resp.read()
                ok = 200 <= resp.status < 300
        except (urllib.error.URLError, OSError, ValueError) as e:
            print(f"call {n}: {e}", file=sys.stderr)
        if ok:
            break
    with lock:
        print(f"LABRUN call={n} ms={(time.monotonic() - start) * 1000:.1f} outcome={'ok' if ok else 'error'}", flush=True)
        if not ok:
            failed.append(n)


def worker(w):
    for i in range(calls):
        if i > 0 and pause > 0:
            time.sleep(pause)
        call(w * calls + i + 1)


threads = [threading.Thread(target=worker, args=(w,)) for w in range(concurrency)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.exit(1 if failed else 0)
