"""A labrun probe for Python's urllib.request: labrun probe -- python3 examples/probes/python/urllib_probe.py

Every call is a urlopen (urllib keeps no pool: one connection per call); labrun_protocol.py
runs the calls. Configure by environment:
  PROBE_TIMEOUT   urlopen's timeout, seconds (the socket's: it bounds the connect and every
                  read, not the call); unset: none
  PROBE_RETRIES   calls made again after a failure (urllib retries nothing itself); default 0
"""
import os
import ssl
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labrun_protocol import ca_file, run  # noqa: E402

timeout = float(os.environ["PROBE_TIMEOUT"]) if os.environ.get("PROBE_TIMEOUT") else None
retries = int(os.environ.get("PROBE_RETRIES", "0"))
context = ssl.create_default_context(cafile=ca_file()) if ca_file() else None


def call(url, method, body):
    for attempt in range(retries + 1):
        req = urllib.request.Request(url, data=body, method=method)
        try:
            kw = {} if timeout is None else {"timeout": timeout}
            if context is not None:
                kw["context"] = context
            with urllib.request.urlopen(req, **kw) as resp:
                resp.read()
                return 200 <= resp.status < 300
        except (urllib.error.URLError, OSError, ValueError):
            if attempt == retries:
                raise
    return False


run(call)
