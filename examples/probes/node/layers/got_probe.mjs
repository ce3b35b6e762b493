// A labrun probe for got: npm ci here, then labrun probe -- node examples/probes/node/layers/got_probe.mjs
//
// One got instance (got.extend) serves every call, on Node's global agent with keep-alive.
// got's defaults: retry.limit 2 for GET, PUT, HEAD, DELETE, OPTIONS and TRACE (never POST),
// on 408 413 429 500 502 503 504 521 522 524 and network errors, after 1 s then 2 s (plus up
// to 100 ms of noise); redirects followed, 10 at most; no timeout.
//
// Configure by environment:
//   PROBE_TIMEOUT      timeout.request, seconds: a deadline for each attempt, not the call
//   PROBE_RETRY_LIMIT  retry.limit
import http from "node:http";
import https from "node:https";
import got from "got";
import { ca, run, seconds } from "./protocol.mjs";

const options = {
  agent: { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) },
  throwHttpErrors: false,
};
if (seconds("PROBE_TIMEOUT") !== undefined) options.timeout = { request: seconds("PROBE_TIMEOUT") };
if (process.env.PROBE_RETRY_LIMIT) options.retry = { limit: Number(process.env.PROBE_RETRY_LIMIT) };
if (ca()) options.https = { certificateAuthority: ca() };
const client = got.extend(options);

await run(async (url, method, body) => {
  const resp = await client(url, { method, body });
  return resp.statusCode >= 200 && resp.statusCode < 300;
});
