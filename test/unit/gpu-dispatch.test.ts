/**
 * The dispatch order among prompt attempts waiting in one worker (backends/dispatch-order.ts, GpuPool's
 * lookahead): the loaded model's first within the most urgent priority, none passed over longer than the bound,
 * and attempts handed back (never dropped, never granted twice) when the worker stops or no backend is healthy.
 */
import { describe, expect, it } from 'vitest';
import { nextAttempt, type QueuedAttempt } from '../../src/backends/dispatch-order.ts';
import { GpuPool, NotDispatchedError, type Lease } from '../../src/backends/gpu-pool.ts';
import type { Backend } from '../../src/contracts/render.ts';

const q = (seq: number, model: string, priority = 3, queuedAt = 0): QueuedAttempt => ({ seq, model, priority, queuedAt });

describe('nextAttempt', () => {
  const policy = { maxPassOverMs: 60_000 };

  it('takes the loaded model first among the most urgent, first in first out among those', () => {
    const queue = [q(0, 'flux'), q(1, 'qwen'), q(2, 'qwen'), q(3, 'flux')];
    expect(nextAttempt(queue, 'qwen', 1_000, policy)?.seq).toBe(1);
    expect(nextAttempt(queue, 'flux', 1_000, policy)?.seq).toBe(0);
  });

  it('takes the oldest when nothing is loaded or nobody waits for the loaded model', () => {
    const queue = [q(4, 'qwen'), q(2, 'flux')];
    expect(nextAttempt(queue, undefined, 1_000, policy)?.seq).toBe(2);
    expect(nextAttempt(queue, 'wan', 1_000, policy)?.seq).toBe(2);
  });

  it('never passes over a more urgent priority for the loaded model', () => {
    const queue = [q(0, 'flux', 3), q(1, 'qwen', 1)];
    expect(nextAttempt(queue, 'flux', 1_000, policy)?.seq).toBe(1);
  });

  it('an attempt passed over for the bound goes first whatever is loaded', () => {
    const queue = [q(0, 'flux', 3, 0), q(1, 'qwen', 3, 10_000)];
    expect(nextAttempt(queue, 'qwen', 59_999, policy)?.seq).toBe(1);
    expect(nextAttempt(queue, 'qwen', 60_000, policy)?.seq).toBe(0);
  });

  it('a bound of 0 is first in, first out', () => {
    expect(nextAttempt([q(0, 'flux'), q(1, 'qwen')], 'qwen', 0, { maxPassOverMs: 0 })?.seq).toBe(0);
    expect(nextAttempt([], 'qwen', 0, policy)).toBeUndefined();
  });
});

const one: Backend[] = [{ id: 'comfyui-0', url: 'http://gpu-0:8188' }];
const healthy = { get: () => undefined };
const reserveCtx = { slotType: 'activity' as const, taskQueue: 'renders-gpu', workerIdentity: 'w', workerBuildId: '', isSticky: false };

/** Runs `models` through one backend in the order the pool grants them, releasing each as it is granted. */
async function order(pool: GpuPool, first: Lease, models: string[]): Promise<string[]> {
  const ran: string[] = [];
  const waiting = models.map((model) =>
    pool.acquire({ model }).then((lease) => {
      ran.push(model);
      lease.release(model);
    }),
  );
  first.release('flux');
  await Promise.all(waiting);
  return ran;
}

describe('GpuPool lookahead', () => {
  it('takes one permit per healthy backend plus the lookahead, none while no backend is healthy', () => {
    const marked = new Set<string>();
    const pool = new GpuPool(one, { get: (b: Backend) => (marked.has(b.id) ? 'wedged' : undefined) }, { lookahead: 2, maxPassOverMs: 60_000 });
    const slots = pool.slotSupplier();
    expect([1, 2, 3, 4].map(() => slots.tryReserveSlot(reserveCtx) !== null)).toEqual([true, true, true, false]);
    for (let i = 0; i < 3; i++) slots.releaseSlot({ permit: {} });
    marked.add('comfyui-0');
    expect(slots.tryReserveSlot(reserveCtx)).toBeNull();
  });

  it('a freed backend runs the waiting attempts of its loaded model first; FIFO with a bound of 0', async () => {
    const grouped = new GpuPool(one, healthy, { lookahead: 8, maxPassOverMs: 60_000, now: () => 0 });
    expect(await order(grouped, await grouped.acquire({ model: 'flux' }), ['qwen', 'flux', 'qwen', 'flux'])).toEqual(['flux', 'flux', 'qwen', 'qwen']);
    const fifo = new GpuPool(one, healthy, { lookahead: 8, maxPassOverMs: 0 });
    expect(await order(fifo, await fifo.acquire({ model: 'flux' }), ['qwen', 'flux', 'qwen', 'flux'])).toEqual(['qwen', 'flux', 'qwen', 'flux']);
  });

  it('an attempt passed over for the bound runs next', async () => {
    let now = 0;
    const pool = new GpuPool(one, healthy, { lookahead: 8, maxPassOverMs: 1_000, now: () => now });
    const first = await pool.acquire({ model: 'flux' });
    const ran: string[] = [];
    const qwen = pool.acquire({ model: 'qwen' }).then((l) => (ran.push('qwen'), l));
    const flux = pool.acquire({ model: 'flux' }).then((l) => (ran.push('flux'), l));
    now = 1_000;
    first.release('flux');
    (await qwen).release('qwen');
    (await flux).release('flux');
    expect(ran).toEqual(['qwen', 'flux']);
  });

  it('the most urgent priority first, whatever is loaded', async () => {
    const pool = new GpuPool(one, healthy, { lookahead: 8, maxPassOverMs: 60_000, now: () => 0 });
    const first = await pool.acquire({ model: 'flux' });
    const ran: string[] = [];
    const flux = pool.acquire({ model: 'flux', priority: 3 }).then((l) => (ran.push('flux'), l.release('flux')));
    const qwen = pool.acquire({ model: 'qwen', priority: 1 }).then((l) => (ran.push('qwen'), l.release('qwen')));
    first.release('flux');
    await Promise.all([flux, qwen]);
    expect(ran).toEqual(['qwen', 'flux']);
  });

  it('while paused (no GPU lease) waiting attempts keep their place and start once it is back', async () => {
    let paused = false;
    const pool = new GpuPool(one, healthy, { lookahead: 4, maxPassOverMs: 60_000, paused: () => paused });
    const first = await pool.acquire({ model: 'flux' });
    const next = pool.acquire({ model: 'qwen' });
    paused = true;
    first.release('flux');
    await new Promise((r) => setImmediate(r));
    expect(pool.queued()).toBe(1);
    paused = false;
    pool.recheck();
    expect((await next).backend.id).toBe('comfyui-0');
  });

  it('hands waiting attempts back when the worker stops, and refuses new ones; the running one keeps its backend', async () => {
    const pool = new GpuPool(one, healthy, { lookahead: 4, maxPassOverMs: 60_000 });
    const running = await pool.acquire({ model: 'flux' });
    const waiting = pool.acquire({ model: 'qwen' });
    pool.handBack('the worker is stopping');
    await expect(waiting).rejects.toBeInstanceOf(NotDispatchedError);
    await expect(pool.acquire({ model: 'flux' })).rejects.toThrow('the worker is stopping');
    expect(pool.busy()).toBe(true);
    running.release('flux');
    expect(pool.busy()).toBe(false);
  });

  it('with every backend unhealthy, the first waiting attempt gets one (and fails saying why), the others go back', async () => {
    const marked = new Set<string>();
    const pool = new GpuPool(one, { get: (b: Backend) => (marked.has(b.id) ? 'wedged' : undefined) }, { lookahead: 4, maxPassOverMs: 60_000 });
    const first = await pool.acquire({ model: 'flux' });
    const a = pool.acquire({ model: 'qwen' });
    const b = pool.acquire({ model: 'flux' });
    marked.add('comfyui-0');
    first.release('flux');
    expect((await a).backend.id).toBe('comfyui-0');
    await expect(b).rejects.toBeInstanceOf(NotDispatchedError);
  });

  it('an aborted wait leaves the queue', async () => {
    const pool = new GpuPool(one, healthy, { lookahead: 4, maxPassOverMs: 60_000 });
    const first = await pool.acquire({ model: 'flux' });
    const ac = new AbortController();
    const waiting = pool.acquire({ model: 'qwen' }, ac.signal);
    ac.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    expect(pool.queued()).toBe(0);
    first.release('flux');
    expect(pool.busy()).toBe(false);
  });
});
