#!/bin/sh
# A ten-line labrun probe: curl with a 2 s deadline, every call a curl of its own, in sequence.
i=0 failed=0
while [ "$i" -lt "$((LABRUN_CALLS * LABRUN_CONCURRENCY))" ]; do
  [ "$i" -gt 0 ] && sleep "$LABRUN_PAUSE"
  curl -sf -o /dev/null --max-time 2 -X "$LABRUN_METHOD" "$LABRUN_URL" || failed=1
  i=$((i + 1))
done
exit "$failed"
