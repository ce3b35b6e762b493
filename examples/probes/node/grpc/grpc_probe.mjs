// A labrun probe --grpc for @grpc/grpc-js (npm ci in this directory first): it calls
// LABRUN_GRPC_METHOD on the target LABRUN_URL with the metadata labrun-fault:
// LABRUN_GRPC_FAULT and labrun-call: LABRUN_GRPC_CALL, LABRUN_CONCURRENCY calls at once on one
// client, and exits 0 when every call ended OK.
//
// At its defaults grpc-js sets no deadline and no retry policy. PROBE_DEADLINE (seconds) gives
// every call a deadline (sent as grpc-timeout); PROBE_MAX_ATTEMPTS a retry policy for UNAVAILABLE
// (backoff 0.1 s x2, up to 1 s; grpc-js 1.14.7 scales each pause by a random factor in
// [0.8, 1.2] as grpc-go does: build/src/retrying-call.js getNextRetryJitter):
//
//   labrun probe --grpc -- node examples/probes/node/grpc/grpc_probe.mjs
//   PROBE_DEADLINE=1.5 PROBE_MAX_ATTEMPTS=3 labrun probe --grpc --deadline 1.5s --retries 2 -- node examples/probes/node/grpc/grpc_probe.mjs
import grpc from '@grpc/grpc-js';

const deadline = Number(process.env.PROBE_DEADLINE || '0');
const maxAttempts = Number(process.env.PROBE_MAX_ATTEMPTS || '0');

const options = {};
if (maxAttempts > 1) {
  options['grpc.service_config'] = JSON.stringify({ methodConfig: [{ name: [{ service: 'labrun.Fault' }], retryPolicy: {
    maxAttempts, initialBackoff: '0.1s', maxBackoff: '1s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] } }] });
}
const client = new grpc.Client(process.env.LABRUN_URL, grpc.credentials.createInsecure(), options);
const method = process.env.LABRUN_GRPC_METHOD || '/labrun.Fault/Call';
const id = (b) => b;

function one() {
  const md = new grpc.Metadata();
  md.set('labrun-fault', process.env.LABRUN_GRPC_FAULT || '');
  md.set('labrun-call', process.env.LABRUN_GRPC_CALL || '');
  const opts = deadline > 0 ? { deadline: Date.now() + deadline * 1000 } : {};
  return new Promise((resolve) => {
    if (method.endsWith('/Stream')) {
      const call = client.makeServerStreamRequest(method, id, id, Buffer.alloc(0), md, opts);
      call.on('data', () => {});
      call.on('error', (err) => { console.error(`call: ${err.code} ${err.details}`); resolve(false); });
      call.on('end', () => resolve(true));
    } else {
      client.makeUnaryRequest(method, id, id, Buffer.alloc(0), md, opts, (err) => {
        if (err) console.error(`call: ${err.code} ${err.details}`);
        resolve(!err);
      });
    }
  });
}

const n = Math.max(1, Number(process.env.LABRUN_CONCURRENCY || '1'));
const ok = await Promise.all(Array.from({ length: n }, one));
client.close();
process.exit(ok.every(Boolean) ? 0 : 1);
