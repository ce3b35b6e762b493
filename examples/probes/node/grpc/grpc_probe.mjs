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
// With LABRUN_GRPC_HOP (seconds) it is a chain's middle hop: its own grpc-js server (B) gets the
// call, works that long, and makes the call to the target (C) from the handler. grpc-js passes a
// deadline down only from a parent call given as the call's `parent` option (build/src/
// resolving-call.js: the deadline becomes the earlier of its own and parentCall.getDeadline(),
// with Propagate.DEFAULTS); PROBE_PROPAGATE=1 gives it, without it nothing goes on.
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
const method = process.env.LABRUN_GRPC_METHOD || '/labrun.Fault/Call';
const id = (b) => b;

function labrunMetadata() {
  const md = new grpc.Metadata();
  md.set('labrun-fault', process.env.LABRUN_GRPC_FAULT || '');
  md.set('labrun-call', process.env.LABRUN_GRPC_CALL || '');
  return md;
}

// serveHop starts the chain's middle hop B on loopback and returns it and its address.
async function serveHop(target, hop, propagate) {
  const downstream = new grpc.Client(target, grpc.credentials.createInsecure());
  const server = new grpc.Server();
  const pending = new Set(); // B's handlers still at work: a hop outlives its caller's giving up
  const def = { path: method, requestStream: false, responseStream: false,
    requestSerialize: id, requestDeserialize: id, responseSerialize: id, responseDeserialize: id };
  server.addService({ Call: def }, {
    Call: (call, callback) => {
      const done = new Promise((resolve) => setTimeout(() => {
        downstream.makeUnaryRequest(method, id, id, call.request, labrunMetadata(), propagate ? { parent: call } : {},
          (err, resp) => { callback(err, resp); resolve(); });
      }, hop * 1000));
      pending.add(done);
      done.then(() => pending.delete(done));
    },
  });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  return { server, pending, addr: `127.0.0.1:${port}` };
}

let target = process.env.LABRUN_URL;
let hop = null;
if (process.env.LABRUN_GRPC_HOP) {
  hop = await serveHop(target, Number(process.env.LABRUN_GRPC_HOP), process.env.PROBE_PROPAGATE === '1');
  target = hop.addr;
}
const client = new grpc.Client(target, grpc.credentials.createInsecure(), options);

function one() {
  const md = labrunMetadata();
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
if (hop) {
  await Promise.all([...hop.pending]);
  hop.server.forceShutdown();
}
process.exit(ok.every(Boolean) ? 0 : 1);
