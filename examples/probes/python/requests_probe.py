"""A labrun probe for Python requests: labrun probe -- python3 examples/probes/python/requests_probe.py

One requests.Session (a urllib3 pool: its connections are reused) serves every call.
LABRUN_CONCURRENCY threads each make LABRUN_CALLS calls in sequence, LABRUN_PAUSE seconds
apart. It exits 0 when every call got a 2xx answer (exit 3 when requests cannot be imported)
and prints a report line per call.

Configure by environment:
  PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT  timeout=(connect, read), seconds; the read timeout
                  bounds every read, not the call; unset: none
  PROBE_RETRIES   HTTPAdapter(max_retries=N): urllib3's Retry(N), which re-sends idempotent
                  methods after connection and read errors; default 0
  PROBE_POOL      HTTPAdapter(pool_maxsize=N, pool_block=True): at most N connections per host;
                  unset: urllib3's 10, not blocking (more are opened, and only 10 kept)
"""
import os
import sys
import threading
import time

try:
    import requests
    from requests.adapters import HTTPAdapter
except ImportError as e:
    print(f"requests is not importable: {e}", file=sys.stderr)
    sys.exit(3)

url = os.environ["LABRUN_URL"]
method = os.environ.get("LABRUN_METHOD", "GET")
calls = int(os.environ.get("LABRUN_CALLS", "1"))
concurrency = int(os.environ.get("LABRUN_CONCURRENCY", "1"))
pause = float(os.environ.get("LABRUN_PAUSE", "0"))


def seconds(name):
    v = os.environ.get(name)
    return float(v) if v else None


timeout = (seconds("PROBE_CONNECT_TIMEOUT"), seconds("PROBE_READ_TIMEOUT"))
adapter = {"max_retries": int(os.environ.get("PROBE_RETRIES", "0"))}
if os.environ.get("PROBE_POOL"):
    adapter.update(pool_maxsize=int(os.environ["PROBE_POOL"]), pool_block=True)
session = requests.Session()
session.mount("http://", HTTPAdapter(**adapter))
failed = []
lock = threading.Lock()


def call(n):
    start = time.monotonic()
    ok = False
    try:
        resp = session.request(method, url, data=b"labrun" if method == "POST" else None, timeout=timeout)
        ok = 200 <= resp.status_code < 300
    except requests.RequestException as e:
        print(f"call {n}: {e}", file=sys.stderr)
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
