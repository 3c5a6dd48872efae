/** The large-body gate: at most N large bodies are parsed and held at once, the rest wait in order. */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerBodyGate, releaseBodySlot } from '../../src/api/body-gate.ts';
import { registerLenientBodyParsers } from '../../src/api/body-parsers.ts';
import { closeBytePool } from '../../src/bytes/pool.ts';

function app() {
  const f = Fastify();
  const gate = registerBodyGate(f, { largeBytes: 100, maxConcurrent: 1 });
  const order: string[] = [];
  const gates = new Map<string, () => void>();
  f.post('/keep', { config: { keepsBodySlot: true } }, async (req) => {
    const { id } = req.body as { id: string };
    order.push(`start ${id}`);
    await new Promise<void>((r) => gates.set(id, r));
    releaseBodySlot(req);
    order.push(`released ${id}`);
    // The client still waits for its answer; the slot is free already.
    await new Promise<void>((r) => gates.set(`${id}-answer`, r));
    return { id };
  });
  f.post('/plain', async (req) => ({ id: (req.body as { id: string }).id }));
  return { f, gate, order, gates };
}

const big = (id: string) => JSON.stringify({ id, pad: 'x'.repeat(200) });
const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('registerBodyGate', () => {
  it('lets the next large body in only once the previous handler released its slot, not when it answers', async () => {
    const { f, gate, order, gates } = app();
    const a = f.inject({ method: 'POST', url: '/keep', headers: { 'content-type': 'application/json' }, payload: big('a') });
    const b = f.inject({ method: 'POST', url: '/keep', headers: { 'content-type': 'application/json' }, payload: big('b') });
    await until(() => order.includes('start a'));
    await until(() => gate.waiting() === 1);
    expect(order).toEqual(['start a']);
    gates.get('a')!();
    await until(() => order.includes('start b'));
    expect(order).toEqual(['start a', 'released a', 'start b']);
    gates.get('b')!();
    gates.get('a-answer')!();
    await until(() => gates.has('b-answer'));
    gates.get('b-answer')!();
    expect((await a).json()).toEqual({ id: 'a' });
    expect((await b).json()).toEqual({ id: 'b' });
    expect(gate.active()).toBe(0);
  });

  it('small bodies pass without a slot; other routes release once parsed; a refused body frees its slot', async () => {
    const { f, gate, order, gates } = app();
    const held = f.inject({ method: 'POST', url: '/keep', headers: { 'content-type': 'application/json' }, payload: big('h') });
    await until(() => order.includes('start h'));
    const small = await f.inject({ method: 'POST', url: '/plain', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ id: 's' }) });
    expect(small.json()).toEqual({ id: 's' });
    gates.get('h')!();
    await until(() => gate.active() === 0);
    const plain = await f.inject({ method: 'POST', url: '/plain', headers: { 'content-type': 'application/json' }, payload: big('p') });
    expect(plain.json()).toEqual({ id: 'p' });
    const bad = await f.inject({
      method: 'POST',
      url: '/plain',
      headers: { 'content-type': 'application/json' },
      payload: `{"id": "x", ${'"y":1,'.repeat(30)}`,
    });
    expect(bad.statusCode).toBe(400);
    expect(gate.active()).toBe(0);
    gates.get('h-answer')!();
    await held;
  });
});

describe('decode turns (issue 25)', () => {
  it('reads two large bodies at once but parses and decodes one at a time, in order; a refused body gives its turn back', async () => {
    const f = Fastify();
    registerLenientBodyParsers(f, { offLoopFromBytes: 100 });
    const gate = registerBodyGate(f, { largeBytes: 100, maxConcurrent: 2, maxDecoding: 1 });
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    f.post('/keep', { config: { keepsBodySlot: true } }, async (req) => {
      const { id } = req.body as { id: string };
      order.push(`parsed ${id}`);
      await new Promise<void>((r) => gates.set(id, r));
      releaseBodySlot(req);
      return { id };
    });
    try {
      const send = (id: string) => f.inject({ method: 'POST', url: '/keep', headers: { 'content-type': 'application/json' }, payload: big(id) });
      const a = send('a');
      await until(() => order.includes('parsed a'));
      const b = send('b');
      // b holds a read slot (its body is in) but waits for a's decode turn; c waits for a read slot.
      await until(() => gate.active() === 2);
      const c = send('c');
      await until(() => gate.waiting() === 1);
      expect(order).toEqual(['parsed a']);
      gates.get('a')!();
      await until(() => order.includes('parsed b'));
      expect(order).toEqual(['parsed a', 'parsed b']);
      gates.get('b')!();
      await until(() => order.includes('parsed c'));
      gates.get('c')!();
      expect((await Promise.all([a, b, c])).map((r) => r.json<{ id: string }>().id)).toEqual(['a', 'b', 'c']);
      expect(gate.active()).toBe(0);
      // A large body refused by its parse (invalid JSON) gives its turn back too.
      const bad = await f.inject({ method: 'POST', url: '/keep', headers: { 'content-type': 'application/json' }, payload: `{"id": ${'1'.repeat(200)}` });
      expect(bad.statusCode).toBe(400);
      const after = send('d');
      await until(() => order.includes('parsed d'));
      gates.get('d')!();
      expect((await after).json()).toEqual({ id: 'd' });
      expect(gate.active()).toBe(0);
    } finally {
      await f.close();
      await closeBytePool();
    }
  });
});

describe('slow uploads (red-team M3)', () => {
  it('bodies that trickle lose their slot (408, closed); a genuine large body gets through meanwhile', async () => {
    const { default: net } = await import('node:net');
    const f = Fastify();
    registerBodyGate(f, { largeBytes: 100, maxConcurrent: 2, minBytesPerSecond: 20_000, graceMs: 600 });
    f.post('/plain', async (req) => ({ id: (req.body as { id: string }).id }));
    await f.listen({ host: '127.0.0.1', port: 0 });
    const port = (f.server.address() as import('node:net').AddressInfo).port;
    try {
      // Two slow uploads take both slots: headers announce 200 KB, then a few bytes every 100 ms.
      const slow = [0, 1].map(() => {
        const s = net.connect(port, '127.0.0.1');
        let answer = '';
        s.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        s.on('error', () => {});
        s.write('POST /plain HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"id":"slow","pad":"');
        const drip = setInterval(() => s.writable && s.write('xxxx'), 100);
        const closed = new Promise<string>((resolve) => s.on('close', () => (clearInterval(drip), resolve(answer))));
        return closed;
      });
      // A genuine 360 KB body queued behind them is answered once they are evicted.
      const genuine = await fetch(`http://127.0.0.1:${port}/plain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'genuine', pad: 'y'.repeat(360_000) }),
      });
      expect(await genuine.json()).toEqual({ id: 'genuine' });
      for (const answer of await Promise.all(slow)) expect(answer).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await f.close();
    }
  }, 30_000);
});
