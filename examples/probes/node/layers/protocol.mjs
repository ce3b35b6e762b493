// The labrun probe protocol (docs/probe.md) for the Node probes of libraries: it reads
// LABRUN_URL, LABRUN_METHOD, LABRUN_CALLS, LABRUN_CONCURRENCY and LABRUN_PAUSE, runs
// LABRUN_CONCURRENCY workers that each make LABRUN_CALLS calls in sequence (with LABRUN_RATE,
// LABRUN_CALLS calls open loop at that rate, call n's URL with call=n in its query), prints a report
// line per call (the library's whole call, its retries included) and exits 0 when every call
// got a 2xx answer. A probe gives run() one call: call(url, method, body) resolves to true for
// a 2xx answer read in full, false or a rejection otherwise. ca() is the contents of
// LABRUN_CA, a PEM file of certificates to trust instead of Node's own, or undefined.
import { readFileSync } from "node:fs";

const env = process.env;

export function ca() {
  return env.LABRUN_CA ? readFileSync(env.LABRUN_CA) : undefined;
}

// seconds is the variable's value in milliseconds, undefined when unset.
export function seconds(name) {
  return env[name] ? Number(env[name]) * 1000 : undefined;
}

export async function run(call) {
  const url = env.LABRUN_URL;
  const method = env.LABRUN_METHOD || "GET";
  const calls = Number(env.LABRUN_CALLS || 1);
  const concurrency = Number(env.LABRUN_CONCURRENCY || 1);
  const pause = Number(env.LABRUN_PAUSE || 0) * 1000;
  const body = method === "POST" ? "labrun" : undefined;
  let failed = 0;
  async function one(n, target = url) {
    const start = performance.now();
    let ok = false;
    try {
      ok = await call(target, method, body);
    } catch (e) {
      console.error(`call ${n}: ${e.code || ""} ${e.cause ? e.cause.message || e.cause : e.message}`);
    }
    console.log(`LABRUN call=${n} ms=${(performance.now() - start).toFixed(1)} outcome=${ok ? "ok" : "error"}`);
    if (!ok) failed++;
  }
  async function worker(w) {
    for (let i = 0; i < calls; i++) {
      if (i > 0 && pause > 0) await new Promise((r) => setTimeout(r, pause));
      await one(w * calls + i + 1);
    }
  }
  const rate = Number(env.LABRUN_RATE || 0);
  if (rate > 0) {
    // Open loop: call n starts at (n-1)/rate whatever the calls before it do.
    const begin = performance.now();
    const sep = url.includes("?") ? "&" : "?";
    const pending = [];
    for (let i = 0; i < calls; i++) {
      const wait = begin + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(one(i + 1, `${url}${sep}call=${i + 1}`));
    }
    await Promise.all(pending);
    process.exit(failed ? 1 : 0);
  }
  await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
  process.exit(failed ? 1 : 0);
}
