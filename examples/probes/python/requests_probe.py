"""A labrun probe for Python requests: labrun probe -- python3 examples/probes/python/requests_probe.py

One requests.Session (a urllib3 pool: its connections are reused) serves every call;
labrun_protocol.py runs the calls. It exits 3 when requests cannot be imported. Configure by
environment:
  PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT  timeout=(connect, read), seconds; the read timeout
                  bounds every read, not the call; unset: none
  PROBE_RETRIES   HTTPAdapter(max_retries=N): urllib3's Retry(N), which re-sends idempotent
                  methods after connection and read errors; default 0
  PROBE_RETRY_ANY_METHOD=1  with PROBE_RETRIES: Retry(total=N, allowed_methods=None), which
                  re-sends any method, a POST included
  PROBE_BACKOFF_FACTOR      with PROBE_RETRIES: Retry's backoff_factor, seconds; default 0
  PROBE_POOL      HTTPAdapter(pool_maxsize=N, pool_block=True): at most N connections per host;
                  unset: urllib3's 10, not blocking (more are opened, and only 10 kept)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labrun_protocol import ca_file, run  # noqa: E402

try:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry
except ImportError as e:
    print(f"requests is not importable: {e}", file=sys.stderr)
    sys.exit(3)


def seconds(name):
    v = os.environ.get(name)
    return float(v) if v else None


timeout = (seconds("PROBE_CONNECT_TIMEOUT"), seconds("PROBE_READ_TIMEOUT"))
retries = int(os.environ.get("PROBE_RETRIES", "0"))
if os.environ.get("PROBE_RETRY_ANY_METHOD") == "1" or os.environ.get("PROBE_BACKOFF_FACTOR"):
    retry = {"total": retries, "backoff_factor": float(os.environ.get("PROBE_BACKOFF_FACTOR", "0"))}
    if os.environ.get("PROBE_RETRY_ANY_METHOD") == "1":
        retry["allowed_methods"] = None
    retries = Retry(**retry)
adapter = {"max_retries": retries}
if os.environ.get("PROBE_POOL"):
    adapter.update(pool_maxsize=int(os.environ["PROBE_POOL"]), pool_block=True)
session = requests.Session()
session.mount("http://", HTTPAdapter(**adapter))
session.mount("https://", HTTPAdapter(**adapter))
# Per request: a Session.verify would lose to REQUESTS_CA_BUNDLE from the environment
# (Session.merge_environment_settings).
verify = ca_file() or True


def call(url, method, body):
    resp = session.request(method, url, data=body, timeout=timeout, verify=verify)
    return 200 <= resp.status_code < 300


run(call)
