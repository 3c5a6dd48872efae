/**
 * The fuzzer's hostile clients (issue 27): concurrent traffic shapes (abandoned heavy requests, idle sockets,
 * slow headers, slow bodies), each played against a listening front with the default limits (real sockets:
 * abandoning a request, trickling a body and holding idle connections need them; the attackers run in a
 * process of their own, test/support/attacker.mjs). The measure is the
 * latency a well-behaved client's 64×64 img2img sees under the attack against the same run's unloaded latency,
 * never a fixed number of milliseconds; and that it is never refused for lack of a slot it was entitled to.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runByteTask } from '../../src/bytes/pool.ts';
import { startTestFront, type TestFront } from '../support/front.ts';
import { abandonedHeavyEdits, idleSockets, medianLatency, slowHeaders, slowUploads, type Attack } from '../support/hostile-clients.ts';

/**
 * The attacked median may be this many times the unloaded one. The bar is 2× on a quiet machine; the
 * tests share two cores with other suites and CI's CPU hogs, and a median of five short requests moves by
 * several times on its own there (5.04× seen once in a full run). Before the fixes each of these attacks made
 * it 30-200× (seconds to minutes): 10× still tells starvation from that noise.
 */
const MAX_RATIO = 10;
const SAMPLES = 5;

let front: TestFront;
let base: string;
let port: number;

beforeAll(async () => {
  front = await startTestFront();
  await front.app.listen({ host: '127.0.0.1', port: 0 });
  port = (front.app.server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  // The pool's first use loads its code: not part of any latency below.
  await runByteTask('jsonShape', { bytes: Buffer.from('[]'), handBack: false });
  await medianLatency(base, 5);
}, 60_000);
afterAll(async () => {
  await front?.close();
});

/** The well-behaved client got through: its render was started (this front's stand-in then answers "no GPU"). */
function expectServed(answers: Array<{ status: number; body: string }>): void {
  for (const a of answers) expect(a.body, `answered ${a.status}`).toContain('no GPU in this test');
}

/**
 * The well-behaved client's median latency under the attack, over its median just before it (same run) plus
 * the wait the design allows it (`designedWaitMs`, default none).
 */
async function underAttack(start: () => Promise<Attack> | Attack, opts: { large?: boolean; settleMs?: number; designedWaitMs?: number } = {}): Promise<number> {
  const unloaded = (await medianLatency(base, SAMPLES, opts.large ? { large: true } : {})).ms;
  const attack = await start();
  try {
    // Let the attack fill what it can fill before the well-behaved client arrives.
    await new Promise((r) => setTimeout(r, opts.settleMs ?? 1_500));
    const { ms, answers } = await medianLatency(base, SAMPLES, opts.large ? { large: true } : {});
    expectServed(answers);
    console.log(`  unloaded ${unloaded.toFixed(0)} ms, under attack ${ms.toFixed(0)} ms (×${(ms / unloaded).toFixed(1)}; ${attack.sent()} attack requests)`);
    return ms / (unloaded + (opts.designedWaitMs ?? 0));
  } finally {
    await attack.stop();
  }
}

describe('issue 27: no one client starves the others', () => {
  it('H1: 20 clients sending one-colour 16 Mpx PNG edits, each abandoned after 1 s', async () => {
    expect(await underAttack(() => abandonedHeavyEdits(base, { clients: 20, abandonAfterMs: 1_000 }))).toBeLessThan(MAX_RATIO);
  }, 120_000);
});

describe('issue 27: connections and large bodies are shared', () => {
  it('M1: 1 100 idle sockets, renewed as they are closed', async () => {
    expect(await underAttack(() => idleSockets(port, 1_100))).toBeLessThan(MAX_RATIO);
  }, 120_000);

  it('M1: 1 100 sockets that send half their headers and stop', async () => {
    expect(await underAttack(() => slowHeaders(port, 1_100))).toBeLessThan(MAX_RATIO);
  }, 120_000);

  it('M2: eight 600 KB uploads at 20 KB/s (above the minimum rate) against a genuine 300 KB img2img', async () => {
    // The genuine body waits for a slot until a slow one gives it up: the gate's one-second grace under
    // contention (src/api/body-gate.ts). ~0.3 s measured against a 16-74 ms unloaded median; 120 s before the fix.
    const attack = () => slowUploads(port, { count: 8, bytes: 600_000, bytesPerSecond: 20_000 });
    expect(await underAttack(attack, { large: true, settleMs: 2_000, designedWaitMs: 1_000 })).toBeLessThan(MAX_RATIO);
  }, 120_000);
});

describe('issue 27: small findings', () => {
  it('L1: prototype-named body keys on /v1/images/generations are a 4xx or a render, never a 500', async () => {
    for (const key of ['toString', 'constructor', 'hasOwnProperty', '__proto__', 'valueOf']) {
      const res = await fetch(`${base}/v1/images/generations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"prompt":"a cat","${key}":"x"}`,
      });
      const text = await res.text();
      expect(res.status, `${key}: ${text.slice(0, 200)}`).not.toBe(500);
      if (res.status >= 500) expect(text).toContain('no GPU in this test');
    }
  });

  it('L3: a 503 says when to come back (Retry-After), in the family’s envelope', async () => {
    const res = await fetch(`${base}/v1/images/generations`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt":"a cat"}' });
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('server_error');
  });

  it('I1: outputs and every other answer carry X-Content-Type-Options: nosniff', async () => {
    const res = await fetch(`${base}/renders/render-x/outputs/0`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
