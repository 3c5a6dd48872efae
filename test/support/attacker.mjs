// A hostile client in a process of its own (plain JavaScript, no loader): `clients` loops that each POST the
// body in `bodyFile` to `url` and abandon it after `abandonAfterMs`, again and again, until told to stop. Its
// own work (building, sending and abandoning requests) never shares the event loop of the front it attacks.
// Started by test/support/hostile-clients.ts; answers {sent} to a 'count' message.
import { readFileSync } from 'node:fs';
import net from 'node:net';

const opts = JSON.parse(process.argv[2]);
const body = opts.bodyFile ? readFileSync(opts.bodyFile) : undefined;
let sent = 0;
let stopped = false;

async function client() {
  while (!stopped) {
    sent++;
    try {
      const res = await fetch(opts.url, { method: 'POST', body, headers: opts.headers, signal: AbortSignal.timeout(opts.abandonAfterMs) });
      await res.arrayBuffer();
    } catch {
      // abandoned, refused or reset: the next one goes
    }
  }
}

// Sockets mode: `sockets` connections to `port` that send `prefix` (maybe nothing) and then nothing, each
// opened again 10 ms after the server closes it.
function socket() {
  if (stopped) return;
  sent++;
  const s = net.connect(opts.port, '127.0.0.1');
  s.on('connect', () => opts.prefix && s.write(opts.prefix));
  s.on('error', () => undefined);
  s.on('close', () => setTimeout(socket, 10));
}

process.on('message', (m) => {
  if (m === 'count') process.send({ sent });
  if (m === 'stop') {
    stopped = true;
    process.send({ sent, stopped: true });
    setTimeout(() => process.exit(0), 50);
  }
});
if (opts.sockets) for (let i = 0; i < opts.sockets; i++) socket();
else for (let i = 0; i < opts.clients; i++) void client();
process.send({ ready: true });
