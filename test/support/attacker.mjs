// A hostile client in a process of its own (plain JavaScript, no loader): `clients` loops that each POST the
// body in `bodyFile` to `url` and abandon it after `abandonAfterMs`, again and again, until told to stop. Its
// own work (building, sending and abandoning requests) never shares the event loop of the front it attacks.
// Started by test/support/hostile-clients.ts; answers {sent} to a 'count' message.
import { readFileSync } from 'node:fs';

const opts = JSON.parse(process.argv[2]);
const body = readFileSync(opts.bodyFile);
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

process.on('message', (m) => {
  if (m === 'count') process.send({ sent });
  if (m === 'stop') {
    stopped = true;
    process.send({ sent, stopped: true });
    setTimeout(() => process.exit(0), 50);
  }
});
for (let i = 0; i < opts.clients; i++) void client();
process.send({ ready: true });
