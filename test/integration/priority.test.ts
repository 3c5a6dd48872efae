/**
 * Per-request priority end to end, on one backend (one GPU slot) so renders wait in the shared GPU queue:
 * while a render holds the GPU, three renders at X-Priority 5 queue up, then one with body priority 1.
 * Once the GPU is free the urgent one starts first, the others in the order they came (no preemption: the
 * running render is never displaced by the priority-1 arrival). Priority shows in `renders list`.
 */
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, stepMs: 5, logLevel: 'silent' });
  // A long stall timeout: the first render hangs until the test interrupts it.
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { STALL_TIMEOUT_MS: '120000' } });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

const body = (seed: number, extra: Record<string, unknown> = {}) => ({
  prompt: 'priority',
  model: 'imagegen-flux-schnell',
  width: 64,
  height: 64,
  steps: 4,
  seed,
  ...extra,
});

async function post(key: string, b: unknown, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...headers },
    body: JSON.stringify(b),
  });
  await res.arrayBuffer();
  return res.status;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The render's prompt attempt waits in the GPU queue (scheduled, not started). */
const waitingForGpu = (key: string) =>
  waitFor(`${key} to wait for the GPU`, async () => {
    const d = await client.workflow.getHandle(renderIdForKey(key)).describe();
    return d.raw.pendingActivities?.some(
      (a) => a.activityType?.name === 'runPrompt' && a.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
    )
      ? true
      : undefined;
  });

/** When the render's completed prompt attempt started (server clock). */
async function gpuStart(key: string): Promise<number> {
  const events = (await client.workflow.getHandle(renderIdForKey(key)).fetchHistory()).events ?? [];
  const done = events.find((e) => e.activityTaskCompletedEventAttributes)!.activityTaskCompletedEventAttributes!;
  const started = events.find((e) => Number(e.eventId) === Number(done.startedEventId))!;
  return Number(started.eventTime!.seconds) * 1000 + Math.floor((started.eventTime!.nanos ?? 0) / 1e6);
}

describe('per-request priority', () => {
  it('a priority-1 render overtakes waiting priority-5 ones; FIFO within a key; the running one keeps its GPU', async () => {
    const run = Date.now().toString(36);
    await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hang: { count: 1 } }) });
    const holder = `prio-${run}-holder`;
    const low = [1, 2, 3].map((i) => `prio-${run}-low-${i}`);
    const urgent = `prio-${run}-urgent`;
    const pending: Promise<number>[] = [post(holder, body(1))];
    await waitFor('the first render to hold the GPU', async () => {
      const st = (await (await fetch(`${fake.url}/__fake/stats`)).json()) as { queue: { running: string[] } };
      return st.queue.running.length === 1 ? true : undefined;
    });
    for (const [i, key] of low.entries()) {
      pending.push(post(key, body(10 + i), { 'x-priority': '5' }));
      await waitingForGpu(key);
    }
    pending.push(post(urgent, body(20, { priority: 1 })));
    await waitingForGpu(urgent);
    // Free the GPU: the held prompt is interrupted (its render retries later, at its own priority 3).
    await fetch(`${fake.url}/interrupt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await Promise.all(pending)).toEqual([200, 200, 200, 200, 200]);

    const [u, l1, l2, l3] = await Promise.all([urgent, ...low].map(gpuStart));
    expect(u).toBeLessThanOrEqual(l1!);
    expect(l1).toBeLessThanOrEqual(l2!);
    expect(l2).toBeLessThanOrEqual(l3!);

    const res = await fetch(`${svc.url}/renders?limit=10`);
    const list = (await res.json()) as { renders: { id: string; priority?: number }[] };
    const byId = new Map(list.renders.map((r) => [r.id, r.priority]));
    expect(byId.get(renderIdForKey(urgent))).toBe(1);
    expect(byId.get(renderIdForKey(low[0]!))).toBe(5);
    expect(byId.get(renderIdForKey(holder))).toBe(3);
  });

  it('an invalid X-Priority is a 422 naming the header, and starts nothing', async () => {
    const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-priority': '7' },
      body: JSON.stringify(body(99)),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { field?: string }).field).toBe('X-Priority');
  });
});
