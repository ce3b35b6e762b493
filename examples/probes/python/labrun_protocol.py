"""The labrun probe protocol for the Python probes: it reads LABRUN_URL, LABRUN_METHOD,
LABRUN_CALLS, LABRUN_CONCURRENCY and LABRUN_PAUSE, runs LABRUN_CONCURRENCY threads that each
make LABRUN_CALLS calls in sequence (or, with LABRUN_RATE, LABRUN_CALLS calls open loop at that
rate, call n's URL with call=n added to its query), prints a report line per call and exits 0 when every call
got a 2xx answer. Each probe gives it one call: call(url, method, body) returns True for a 2xx
answer, False or an exception otherwise. ca_file() is LABRUN_CA, a PEM file of certificates the
probe trusts instead of the system's, or None."""
import os
import sys
import threading
import time


def ca_file():
    return os.environ.get("LABRUN_CA") or None


def settings():
    """The calls asked for: (url, method, calls, concurrency, pause, body)."""
    method = os.environ.get("LABRUN_METHOD", "GET")
    return (os.environ["LABRUN_URL"], method, int(os.environ.get("LABRUN_CALLS", "1")),
            int(os.environ.get("LABRUN_CONCURRENCY", "1")), float(os.environ.get("LABRUN_PAUSE", "0")),
            b"labrun" if method == "POST" else None)


def report(n, start, ok):
    """Prints call n's report line: its time since start (time.monotonic()) and its outcome."""
    print(f"LABRUN call={n} ms={(time.monotonic() - start) * 1000:.1f} outcome={'ok' if ok else 'error'}", flush=True)


def run(call):
    url, method, calls, concurrency, pause, body = settings()
    failed = []
    lock = threading.Lock()

    def one(n, target=url):
        start = time.monotonic()
        try:
            ok = call(target, method, body)
        except Exception as e:  # the client's errors: the call failed
            print(f"call {n}: {e}", file=sys.stderr)
            ok = False
        with lock:
            report(n, start, ok)
            if not ok:
                failed.append(n)

    def worker(w):
        for i in range(calls):
            if i > 0 and pause > 0:
                time.sleep(pause)
            one(w * calls + i + 1)

    rate = float(os.environ.get("LABRUN_RATE", "0"))
    if rate > 0:
        # Open loop: call n starts at (n-1)/rate whatever the calls before it do.
        threads, begin = [], time.monotonic()
        for i in range(calls):
            time.sleep(max(0.0, begin + i / rate - time.monotonic()))
            sep = "&" if "?" in url else "?"
            t = threading.Thread(target=one, args=(i + 1, f"{url}{sep}call={i + 1}"))
            t.start()
            threads.append(t)
    else:
        threads = [threading.Thread(target=worker, args=(w,)) for w in range(concurrency)]
        for t in threads:
            t.start()
    for t in threads:
        t.join()
    sys.exit(1 if failed else 0)
