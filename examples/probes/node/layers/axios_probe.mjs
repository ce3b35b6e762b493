// A labrun probe for axios: npm ci here, then labrun probe -- node examples/probes/node/layers/axios_probe.mjs
//
// One axios instance serves every call, through keep-alive agents. axios's defaults in Node:
// no timeout, no retry, redirects followed by follow-redirects (maxRedirects 21). Its
// `timeout` runs from the socket's assignment to the response head (the lookup, the connect
// and TLS included), then limits the body's idle time only.
//
// Configure by environment:
//   PROBE_TIMEOUT   timeout, seconds
import http from "node:http";
import https from "node:https";
import axios from "axios";
import { ca, run, seconds } from "./protocol.mjs";

const client = axios.create({
  timeout: seconds("PROBE_TIMEOUT") ?? 0,
  httpAgent: new http.Agent({ keepAlive: true }),
  httpsAgent: new https.Agent({ keepAlive: true, ca: ca() }),
  validateStatus: () => true,
  responseType: "arraybuffer",
});

await run(async (url, method, data) => {
  const resp = await client.request({ url, method, data });
  return resp.status >= 200 && resp.status < 300;
});
