// A labrun probe for Node's fetch (undici): labrun probe -- node examples/probes/node/fetch_probe.mjs
//
// Node's global dispatcher keeps connections alive and reuses them. LABRUN_CONCURRENCY
// workers each make LABRUN_CALLS calls in sequence, LABRUN_PAUSE seconds apart. It exits 0
// when every call got a 2xx answer and prints a report line per call.
//
// Configure by environment:
//   PROBE_TIMEOUT   AbortSignal.timeout, seconds: a deadline for the call, body included;
//                   unset: none (undici's own headersTimeout and bodyTimeout, 300 s, remain)
//   PROBE_RETRIES   calls made again after a failure (fetch retries nothing itself); default 0
//
// LABRUN_CA, a PEM file of certificates to trust besides Node's own, is honoured through
// NODE_EXTRA_CA_CERTS, which Node reads only at its start: the probe starts itself once more
// with it set.
const env = process.env;
if (env.LABRUN_CA && env.NODE_EXTRA_CA_CERTS !== env.LABRUN_CA) {
  const { spawnSync } = await import("node:child_process");
  const again = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...env, NODE_EXTRA_CA_CERTS: env.LABRUN_CA },
  });
  process.exit(again.status ?? 1);
}
const url = env.LABRUN_URL;
const method = env.LABRUN_METHOD || "GET";
const calls = Number(env.LABRUN_CALLS || 1);
const concurrency = Number(env.LABRUN_CONCURRENCY || 1);
const pause = Number(env.LABRUN_PAUSE || 0) * 1000;
const timeout = env.PROBE_TIMEOUT ? Number(env.PROBE_TIMEOUT) * 1000 : 0;
const retries = Number(env.PROBE_RETRIES || 0);
let failed = 0;

async function call(n) {
  const start = performance.now();
  let ok = false;
  for (let attempt = 0; attempt <= retries && !ok; attempt++) {
    try {
      const opts = { method, body: method === "POST" ? "labrun" : undefined };
      if (timeout > 0) opts.signal = AbortSignal.timeout(timeout);
      const resp = await fetch(url, opts);
      await resp.arrayBuffer();
      ok = resp.status >= 200 && resp.status < 300;
    } catch (e) {
      console.error(`call ${n}: ${e.cause ? e.cause.message || e.cause : e.message}`);
    }
  }
  console.log(`LABRUN call=${n} ms=${(performance.now() - start).toFixed(1)} outcome=${ok ? "ok" : "error"}`);
  if (!ok) failed++;
}

async function worker(w) {
  for (let i = 0; i < calls; i++) {
    if (i > 0 && pause > 0) await new Promise((r) => setTimeout(r, pause));
    await call(w * calls + i + 1);
  }
}

// The first fetch of a process loads undici, some tens of milliseconds that a deadline would
// count; a data: URL warms it up without a request, as a long-running application is warm.
await (await fetch("data:,labrun")).arrayBuffer();
await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
process.exit(failed ? 1 : 0);
