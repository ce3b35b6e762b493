// A labrun probe for Node's core http and https modules (http.request, no fetch, no
// dependency): labrun probe --expect node-http -- node examples/probes/node/http_probe.mjs
//
// Every call goes through http.globalAgent (https.globalAgent for https), which keeps sockets
// alive since Node 19 (keepAlive: true, timeout: 5000, scheduling: 'lifo'). Node sends nothing
// again by itself: a reused socket the server closed fails the call (ECONNRESET, "socket hang
// up"; req.reusedSocket tells the caller), and redirects are not followed.
//
// Configure by environment:
//   PROBE_TIMEOUT   the request's timeout option, seconds: the socket's idle timeout
//                   (socket.setTimeout), which only emits 'timeout'; the probe destroys the
//                   request then, as Node's documentation asks. Unset: no timeout option and
//                   no 'timeout' listener, so nothing ends a call the server leaves silent.
import http from "node:http";
import https from "node:https";
import { ca, run, seconds } from "./layers/protocol.mjs";

const timeout = seconds("PROBE_TIMEOUT");
const pem = ca();

await run((url, method, body) => new Promise((resolve, reject) => {
  const u = new URL(url);
  const opts = { method };
  if (timeout !== undefined) opts.timeout = timeout;
  if (pem && u.protocol === "https:") opts.ca = pem;
  const req = (u.protocol === "https:" ? https : http).request(u, opts, (res) => {
    res.on("data", () => {});
    res.on("end", () => resolve(res.statusCode >= 200 && res.statusCode < 300));
    res.on("error", reject);
    res.on("close", () => res.complete || reject(new Error("the response ended before its body")));
  });
  if (timeout !== undefined) req.on("timeout", () => req.destroy(new Error(`timeout ${timeout} ms idle`)));
  req.on("error", reject);
  req.end(body);
}));
