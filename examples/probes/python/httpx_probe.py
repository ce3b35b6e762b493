"""A labrun probe for Python httpx: labrun probe -- python3 examples/probes/python/httpx_probe.py

One httpx.Client (a connection pool: its connections are reused) serves every call;
labrun_protocol.py runs the calls. httpx's defaults: Timeout(5.0), each of connect, read,
write and pool 5 s, the read limit per read; no redirects followed (follow_redirects=False);
no retry (HTTPTransport(retries=0) retries only connects). It exits 3 when httpx cannot be
imported. Configure by environment:
  PROBE_TIMEOUT   httpx.Timeout(N): every limit N seconds
  PROBE_RETRIES   HTTPTransport(retries=N): connects tried again; default 0
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labrun_protocol import ca_file, run  # noqa: E402

try:
    import httpx
except ImportError as e:
    print(f"httpx is not importable: {e}", file=sys.stderr)
    sys.exit(3)

options = {"verify": ca_file() or True}
if os.environ.get("PROBE_TIMEOUT"):
    options["timeout"] = httpx.Timeout(float(os.environ["PROBE_TIMEOUT"]))
if os.environ.get("PROBE_RETRIES"):
    options["transport"] = httpx.HTTPTransport(retries=int(os.environ["PROBE_RETRIES"]), verify=options["verify"])
client = httpx.Client(**options)


def call(url, method, body):
    resp = client.request(method, url, content=body)
    return 200 <= resp.status_code < 300


run(call)
