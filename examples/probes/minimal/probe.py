# A ten-line labrun probe: urllib with a 1 s timeout (per read), calls in sequence.
import os, sys, time, urllib.request
ok = True
for i in range(int(os.environ["LABRUN_CALLS"]) * int(os.environ["LABRUN_CONCURRENCY"])):
    if i: time.sleep(float(os.environ["LABRUN_PAUSE"]))
    req = urllib.request.Request(os.environ["LABRUN_URL"], method=os.environ["LABRUN_METHOD"])
    try:
        urllib.request.urlopen(req, timeout=1).read()
    except OSError:  # urllib's URLError and HTTPError (a status not 2xx) are OSErrors
        ok = False
sys.exit(0 if ok else 1)
