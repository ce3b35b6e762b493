"""A labrun probe for Python aiohttp: labrun probe -- python3 examples/probes/python/aiohttp_probe.py

One aiohttp.ClientSession (a TCPConnector pool: its connections are reused) serves every call,
on one event loop (labrun_protocol.py's settings and report lines, its own loop of tasks): LABRUN_CONCURRENCY tasks each make LABRUN_CALLS calls in sequence,
LABRUN_PAUSE seconds apart, and it prints a report line per call and exits 0 when every call
got a 2xx answer. aiohttp's defaults: ClientTimeout(total=300), a deadline for the call, body
included; redirects followed (max_redirects 10); no retry. It exits 3 when aiohttp cannot be
imported. Configure by environment:
  PROBE_TOTAL      ClientTimeout(total=N), seconds: a deadline for the call, body included
  PROBE_SOCK_READ  ClientTimeout(sock_read=N), seconds: a limit per read
"""
import asyncio
import os
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labrun_protocol import ca_file, report, settings  # noqa: E402

try:
    import aiohttp
except ImportError as e:
    print(f"aiohttp is not importable: {e}", file=sys.stderr)
    sys.exit(3)


def seconds(name):
    v = os.environ.get(name)
    return float(v) if v else None


async def main():
    url, method, calls, concurrency, pause, body = settings()
    timeout = aiohttp.ClientTimeout(total=300)
    if seconds("PROBE_TOTAL") is not None or seconds("PROBE_SOCK_READ") is not None:
        timeout = aiohttp.ClientTimeout(total=seconds("PROBE_TOTAL"), sock_read=seconds("PROBE_SOCK_READ"))
    ca = ca_file()
    ctx = ssl.create_default_context(cafile=ca) if ca else None
    failed = []
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(ssl=ctx)) as session:

        async def one(n):
            start = time.monotonic()
            ok = False
            try:
                async with session.request(method, url, data=body) as resp:
                    await resp.read()
                    ok = 200 <= resp.status < 300
            except Exception as e:  # the client's errors: the call failed
                print(f"call {n}: {type(e).__name__} {e}", file=sys.stderr)
            report(n, start, ok)
            if not ok:
                failed.append(n)

        async def worker(w):
            for i in range(calls):
                if i > 0 and pause > 0:
                    await asyncio.sleep(pause)
                await one(w * calls + i + 1)

        await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return 1 if failed else 0


sys.exit(asyncio.run(main()))
