#!/bin/sh
# A labrun probe for curl: labrun probe -- examples/probes/curl/probe.sh
#
# One curl process makes every call (so that it can reuse its connections), in sequence with
# --rate for LABRUN_PAUSE, or at once with --parallel for LABRUN_CONCURRENCY > 1. It exits 0
# when every call got a whole 2xx answer (a 2xx head and curl's exit code 0 for the
# transfer), and prints a report line per call. When LABRUN_CA names a PEM file, curl trusts
# its certificates instead of the system's (--cacert).
#
# Configure by environment (unset: curl's own default):
#   PROBE_MAX_TIME         --max-time, seconds: a deadline for the whole transfer
#   PROBE_CONNECT_TIMEOUT  --connect-timeout, seconds
#   PROBE_SPEED_TIME       --speed-time with --speed-limit 1, seconds: give up when less than a
#                          byte a second arrives for this long
#   PROBE_RETRY            --retry N (curl retries timeouts and 408, 429, 500, 502, 503, 504)
#   PROBE_FOLLOW=1         -L: follow redirects (--max-redirs 50 by default)
set -u
calls=${LABRUN_CALLS:-1}
n=$((calls * ${LABRUN_CONCURRENCY:-1}))
set -- -s -w '%{http_code} %{time_total} %{exitcode}\n'
[ -n "${PROBE_MAX_TIME:-}" ] && set -- "$@" --max-time "$PROBE_MAX_TIME"
[ -n "${PROBE_CONNECT_TIMEOUT:-}" ] && set -- "$@" --connect-timeout "$PROBE_CONNECT_TIMEOUT"
[ -n "${PROBE_SPEED_TIME:-}" ] && set -- "$@" --speed-limit 1 --speed-time "$PROBE_SPEED_TIME"
[ -n "${PROBE_RETRY:-}" ] && set -- "$@" --retry "$PROBE_RETRY"
[ "${PROBE_FOLLOW:-}" = 1 ] && set -- "$@" -L
[ -n "${LABRUN_CA:-}" ] && set -- "$@" --cacert "$LABRUN_CA"
[ "${LABRUN_METHOD:-GET}" = POST ] && set -- "$@" --data labrun
if [ "${LABRUN_CONCURRENCY:-1}" -gt 1 ]; then
  set -- "$@" --parallel --parallel-immediate --parallel-max "$LABRUN_CONCURRENCY"
elif [ "$calls" -gt 1 ] && [ "${LABRUN_PAUSE:-0}" != 0 ]; then
  set -- "$@" --rate "$(awk "BEGIN { printf \"%d/h\", 3600 / ${LABRUN_PAUSE} }")"
fi
i=0
while [ "$i" -lt "$n" ]; do
  set -- "$@" -o /dev/null "$LABRUN_URL"
  i=$((i + 1))
done
curl "$@" | awk -v n="$n" '
  BEGIN { ok = 1 }
  { good = ($1 ~ /^2/ && $3 == 0); ok = ok && good
    printf "LABRUN call=%d ms=%.1f outcome=%s\n", NR, $2 * 1000, (good ? "ok" : "error") }
  END { exit (NR == n && ok) ? 0 : 1 }'
