/**
 * Late binding inside one worker: which free ComfyUI an attempt gets (model affinity, health), and that the
 * shared GPU queue's slots follow the healthy backends, so an unhealthy one takes no work from the queue.
 */
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/contracts/render.ts';
import { GpuPool } from '../../src/backends/gpu-pool.ts';

const backends: Backend[] = [0, 1, 2].map((i) => ({ id: `comfyui-${i}`, url: `http://gpu-${i}:8188` }));

function health(): { marked: Set<string>; get(b: Backend): unknown } {
  const marked = new Set<string>();
  return { marked, get: (b: Backend) => (marked.has(b.id) ? { reason: 'wedged' } : undefined) };
}

const reserveCtx = { slotType: 'activity' as const, taskQueue: 'renders-gpu', workerIdentity: 'w', workerBuildId: '', isSticky: false };

describe('GpuPool.acquire', () => {
  it('prefers a free backend that last ran the same model, and never waits for it', async () => {
    const pool = new GpuPool(backends, health());
    const a = await pool.acquire({ model: 'flux' });
    const b = await pool.acquire({ model: 'qwen' });
    a.release('flux');
    b.release('qwen');
    expect((await pool.acquire({ model: 'qwen' })).backend.id).toBe(b.backend.id);
    expect((await pool.acquire({ model: 'flux' })).backend.id).toBe(a.backend.id);
    // Only the third backend is left: a model it never ran gets it at once.
    expect((await pool.acquire({ model: 'qwen' })).backend.id).toBe('comfyui-2');
  });

  it('prefers a backend with nothing loaded over evicting another model', async () => {
    const pool = new GpuPool(backends, health());
    const first = await pool.acquire({ model: 'flux' });
    first.release('flux');
    const next = await pool.acquire({ model: 'qwen' });
    expect(next.backend.id).not.toBe(first.backend.id);
  });

  it('skips an unhealthy backend while a healthy one is free', async () => {
    const h = health();
    h.marked.add('comfyui-0');
    h.marked.add('comfyui-1');
    const pool = new GpuPool(backends, h);
    expect((await pool.acquire({})).backend.id).toBe('comfyui-2');
  });

  it('an attempt waits while every backend is busy and gets the one released first', async () => {
    const pool = new GpuPool(backends, health());
    const held = [await pool.acquire({}), await pool.acquire({}), await pool.acquire({})];
    let got: string | undefined;
    const waiting = pool.acquire({}).then((l) => (got = l.backend.id));
    await Promise.resolve();
    expect(got).toBeUndefined();
    held[1]!.release();
    await waiting;
    expect(got).toBe(held[1]!.backend.id);
  });
});

describe('GpuPool.slotSupplier', () => {
  it('hands out one permit per healthy backend and blocks the next poll until one is released', async () => {
    const h = health();
    const pool = new GpuPool(backends, h);
    const slots = pool.slotSupplier();
    const signal = new AbortController().signal;
    await slots.reserveSlot(reserveCtx, signal);
    await slots.reserveSlot(reserveCtx, signal);
    h.marked.add('comfyui-2');
    expect(slots.tryReserveSlot(reserveCtx)).toBeNull();
    let fourth = false;
    const pending = slots.reserveSlot(reserveCtx, signal).then(() => (fourth = true));
    await new Promise((r) => setImmediate(r));
    expect(fourth).toBe(false);
    slots.releaseSlot({ permit: {} });
    await pending;
    expect(fourth).toBe(true);
  });

  it("a backend left running an ended attempt's prompt takes no permit and no attempt until that prompt is gone", async () => {
    const pool = new GpuPool(backends.slice(0, 1), health());
    const slots = pool.slotSupplier();
    await slots.reserveSlot(reserveCtx, new AbortController().signal);
    const lease = await pool.acquire({ model: 'flux' });
    let gone!: () => void;
    lease.releaseWhen(new Promise<void>((r) => (gone = r)), 'flux');
    // The attempt's activity ended: its slot is back, but the ComfyUI still runs its prompt.
    slots.releaseSlot({ permit: {} });
    expect(slots.tryReserveSlot(reserveCtx)).toBeNull();
    expect(pool.busy()).toBe(true);
    let next: string | undefined;
    const waiting = pool.acquire({ model: 'flux' }).then((l) => (next = l.backend.id));
    await new Promise((r) => setImmediate(r));
    expect(next).toBeUndefined();
    gone();
    await waiting;
    expect(next).toBe('comfyui-0');
    expect(pool.loadedModels()).toEqual({ 'comfyui-0': 'flux' });
    expect(slots.tryReserveSlot(reserveCtx)).not.toBeNull();
  });

  it('a waiting reservation ends when the worker shuts down (abort)', async () => {
    const pool = new GpuPool(backends.slice(0, 1), health());
    const slots = pool.slotSupplier();
    await slots.reserveSlot(reserveCtx, new AbortController().signal);
    const ac = new AbortController();
    const pending = slots.reserveSlot(reserveCtx, ac.signal);
    ac.abort(new Error('shutdown'));
    await expect(pending).rejects.toThrow('shutdown');
  });
});
