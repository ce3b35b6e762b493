# Counts the retries botocore's standard retry mode grants failing calls until its quota is
# empty: once for 503 answers, once for read timeouts. Prints the version, then both counts.
import botocore
from botocore.exceptions import ReadTimeoutError
from botocore.retries import quota, standard


class Answer:
    status_code = 503


def retries(timeout):
    checker = standard.RetryQuotaChecker(quota.RetryQuota())
    n = 0
    for _ in range(10000):
        for attempt in range(1, standard.DEFAULT_MAX_ATTEMPTS):
            ctx = standard.RetryContext(
                attempt_number=attempt,
                http_response=None if timeout else Answer(),
                caught_exception=ReadTimeoutError(endpoint_url="http://127.0.0.1") if timeout else None,
                request_context={},
            )
            if not checker.acquire_retry_quota(ctx):
                return n
            n += 1
    return n


print(botocore.__version__, retries(False), retries(True))
