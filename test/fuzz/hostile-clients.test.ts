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
  await runByteTask('parseJson', { bytes: Buffer.from('[]') });
  await medianLatency(base, 5);
}, 60_000);
afterAll(async () => {
  await front?.close();
});

/** Resolves once `done()` holds, checking as the loop turns (every 10 ms); fails after `timeoutMs`. */
async function waitUntil(what: string, done: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

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

describe('issue 27: admission is shared between clients', () => {
  const keys = [
    { name: 'alice', token: 'alice-token-0123456789', role: 'client' },
    { name: 'bob', token: 'bob-token-0123456789', role: 'client' },
  ];
  const auth = (i: number) => ({ authorization: `Bearer ${keys[i]!.token}` });
  let keyed: TestFront;
  let keyedBase: string;

  beforeAll(async () => {
    // The default limits (MAX_WAITING_RENDERS 500, a client's share a quarter of it), with named keys.
    keyed = await startTestFront({ API_KEYS: JSON.stringify(keys) });
    await keyed.app.listen({ host: '127.0.0.1', port: 0 });
    keyedBase = `http://127.0.0.1:${(keyed.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await keyed?.close();
  });

  it("one key floods renders: past its share it gets 429 + Retry-After in A1111's envelope; another key is admitted and answered as fast as unloaded", async () => {
    const unloaded = (await medianLatency(keyedBase, SAMPLES, { headers: auth(1) })).ms;
    // Alice's renders wait (their outcome never comes until the end), as on a GPU busy for hours.
    let release!: () => void;
    const held = new Promise<never>((_, reject) => (release = () => reject(new Error('released'))));
    held.catch(() => undefined);
    const clientOf = (renderId: string) => keyed.starts.find((st) => st.opts.renderId === renderId)?.opts.client;
    const noGpu = keyed.outcome;
    keyed.outcome = (s) => (clientOf(s.renderId) === 'key:alice' ? held : noGpu(s));
    const aliceStarts = () => keyed.starts.filter((st) => st.opts.client === 'key:alice').length;
    const refusals: Array<{ status: number; retryAfter: string | null; body: string }> = [];
    const flood = Array.from({ length: 160 }, (_, i) =>
      fetch(`${keyedBase}/sdapi/v1/txt2img`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...auth(0) },
        body: JSON.stringify({ prompt: `flood ${i}`, steps: 1, width: 64, height: 64 }),
      }).then(async (r) => void refusals.push({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })),
    );
    // Every flood request is refused or started (and waiting) before the well-behaved key comes.
    await waitUntil('every flood request refused or waiting', () => refusals.length + aliceStarts() >= flood.length);
    const aliceRenders = new Set(keyed.starts.filter((st) => st.opts.client === 'key:alice').map((st) => st.opts.renderId));
    try {
      expect(aliceRenders.size).toBe(125);
      expect(refusals).toHaveLength(35);
      for (const r of refusals) {
        expect(r.status).toBe(429);
        expect(Number(r.retryAfter)).toBeGreaterThan(0);
        expect((JSON.parse(r.body) as { detail: string }).detail).toMatch(/MAX_WAITING_RENDERS_PER_CLIENT/);
      }
      const { ms, answers } = await medianLatency(keyedBase, SAMPLES, { headers: auth(1) });
      expectServed(answers);
      console.log(`  admission: unloaded ${unloaded.toFixed(0)} ms, with alice's 125 waiting renders ${ms.toFixed(0)} ms (×${(ms / unloaded).toFixed(1)})`);
      expect(ms / unloaded).toBeLessThan(MAX_RATIO);
    } finally {
      release();
      await Promise.allSettled(flood);
    }
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
