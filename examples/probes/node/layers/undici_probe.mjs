// A labrun probe for undici's request(): npm ci here, then labrun probe -- node examples/probes/node/layers/undici_probe.mjs
//
// One undici Agent serves every call (it pools connections per origin). undici's defaults:
// headersTimeout 300 s (the wait for the head) and bodyTimeout 300 s (between body chunks),
// both checked by a timer wheel of 500 ms ticks for limits of a second or more, so they fire
// up to 500 ms late; no redirects and no retries.
//
// Configure by environment:
//   PROBE_HEADERS_TIMEOUT  headersTimeout, seconds
//   PROBE_BODY_TIMEOUT     bodyTimeout, seconds
//   PROBE_CONNECT_TIMEOUT  connect.timeout, seconds (default 10; on the same timer wheel)
import { Agent, request } from "undici";
import { ca, run, seconds } from "./protocol.mjs";

const dispatcher = new Agent({
  headersTimeout: seconds("PROBE_HEADERS_TIMEOUT"),
  bodyTimeout: seconds("PROBE_BODY_TIMEOUT"),
  connect: { ca: ca() || undefined, timeout: seconds("PROBE_CONNECT_TIMEOUT") },
});

await run(async (url, method, body) => {
  const resp = await request(url, { method, body, dispatcher });
  await resp.body.arrayBuffer();
  return resp.statusCode >= 200 && resp.statusCode < 300;
});
