"""A labrun probe for botocore's retry modes (Debian's python3-botocore, run by /usr/bin/python3):
labrun probe -- /usr/bin/python3 examples/probes/python/botocore_probe.py

Each call is botocore's own attempt loop (endpoint.py Endpoint._send_request) around a plain
request through botocore's HTTP layer (httpsession.URLLib3Session, which raises
ReadTimeoutError and ConnectionError as a client's do), to the probe's URL: no AWS service is
called. After each attempt the mode's real retry handler says whether to retry and how long
to sleep (the needs-retry event's handler), and a call's 2xx answer goes to the standard
mode's retry quota (the after-call event's release_retry_quota). One handler, so one quota,
serves every call, as one client's does. It exits 3 when botocore cannot be imported.
Configure by environment:
  PROBE_RETRY_MODE      standard (retries/standard.py), adaptive (standard's, with
                        retries/adaptive.py's ClientRateLimiter before each attempt and after
                        its answer) or legacy (retryhandler.py with data/_retry.json);
                        default standard
  PROBE_MAX_ATTEMPTS    the standard mode's max_attempts; default botocore's (3)
  PROBE_CONNECT_TIMEOUT, PROBE_READ_TIMEOUT  seconds; default botocore's 60 each
LABRUN_CA is URLLib3Session's verify, a CA bundle in place of certifi's.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from labrun_protocol import ca_file, run  # noqa: E402

try:
    import botocore.loaders
    import botocore.session
    from botocore import retryhandler, translate
    from botocore.awsrequest import AWSRequest
    from botocore.httpsession import URLLib3Session
    from botocore.retries import adaptive, bucket, quota, standard, throttling
except ImportError as e:
    print(f"botocore is not importable: {e}", file=sys.stderr)
    sys.exit(3)

MODE = os.environ.get("PROBE_RETRY_MODE", "standard")
# An operation model, which the standard mode's checkers read (special.py's service name);
# it comes from botocore's own data files.
OPERATION = botocore.session.get_session().get_service_model("sts").operation_model("GetCallerIdentity")
SESSION = URLLib3Session(timeout=(float(os.environ.get("PROBE_CONNECT_TIMEOUT", "60")),
                                  float(os.environ.get("PROBE_READ_TIMEOUT", "60"))),
                         verify=ca_file() or True)

LIMITER = None
if MODE in ("standard", "adaptive"):
    # standard.register_retry_handler's objects.
    QUOTA = standard.RetryQuotaChecker(quota.RetryQuota())
    HANDLER = standard.RetryHandler(
        retry_policy=standard.RetryPolicy(
            retry_checker=standard.StandardRetryConditions(
                max_attempts=int(os.environ.get("PROBE_MAX_ATTEMPTS", standard.DEFAULT_MAX_ATTEMPTS))),
            retry_backoff=standard.ExponentialBackoff()),
        retry_event_adapter=standard.RetryEventAdapter(),
        retry_quota=QUOTA).needs_retry
    if MODE == "adaptive":
        # adaptive.register_retry_handler's objects: ClientCreator registers them after
        # standard's (client.py _register_retries).
        clock = bucket.Clock()
        LIMITER = adaptive.ClientRateLimiter(
            rate_adjustor=throttling.CubicCalculator(starting_max_rate=0, start_time=clock.current_time()),
            rate_clocker=adaptive.RateClocker(clock), token_bucket=bucket.TokenBucket(max_rate=1, clock=clock),
            throttling_detector=standard.ThrottlingErrorDetector(retry_event_adapter=standard.RetryEventAdapter()),
            clock=clock)
elif MODE == "legacy":
    # ClientCreator._register_legacy_retries' handler, for sts.
    QUOTA = None
    original = botocore.loaders.create_loader().load_data("_retry")
    HANDLER = retryhandler.create_retry_handler(
        translate.build_retry_config("sts", original.get("retry", {}), original.get("definitions", {})), "sts")
else:
    print(f"PROBE_RETRY_MODE: want standard, adaptive or legacy, got {MODE!r}", file=sys.stderr)
    sys.exit(2)


def attempt(url, method, body):
    """One attempt: (http_response, parsed) and None, or None and the exception."""
    if LIMITER is not None:
        LIMITER.on_sending_request(request=None)
    try:
        r = SESSION.send(AWSRequest(method=method, url=url, data=body).prepare())
        r.content  # read in full, as the parser does
        return (r, {"ResponseMetadata": {}}), None
    except Exception as e:  # botocore's HTTP errors: the handler decides
        return None, e


def call(url, method, body):
    context = {"retries": {}}
    request_dict = {"context": context}
    attempts = 1
    response, exception = attempt(url, method, body)
    while True:
        event = dict(response=response, endpoint=None, operation=OPERATION, attempts=attempts,
                     caught_exception=exception, request_dict=request_dict)
        delay = HANDLER(**event)
        if LIMITER is not None:
            LIMITER.on_receiving_response(**event)
        if delay is None:
            break
        time.sleep(delay)
        attempts += 1
        response, exception = attempt(url, method, body)
    if exception is not None:
        raise exception
    if QUOTA is not None:
        QUOTA.release_retry_quota(context, response[0])
    return 200 <= response[0].status_code < 300


run(call)
