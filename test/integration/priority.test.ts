/**
 * Per-request priority end to end, on one backend (one GPU slot) so renders wait in the shared GPU queue:
 * while a render holds the GPU, three renders at X-Priority 5 queue up, then one with body priority 1.
 * Once the GPU is free the urgent one starts first, the others in the order they came (no preemption: the
 * running render is never displaced by the priority-1 arrival). Priority shows in `renders list`.
 * Within a priority, clients take turns (issue 27): one key's three waiting renders do not stand between
 * another key's one and the GPU. The operator CLI acts for one key with `--owner` on those renders.
 */
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRenders } from '../../src/cli/renders.ts';
import type { RenderSummary } from '../../src/operators/types.ts';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { backlogAtPriority } from '../support/task-queue.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const KEYS = [
  { name: 'ops', token: 'ops-token-0123456789', role: 'operator' },
  { name: 'alice', token: 'alice-token-0123456789', role: 'client' },
  { name: 'bob', token: 'bob-token-0123456789', role: 'client' },
];
const auth = (name: string) => ({ authorization: `Bearer ${KEYS.find((k) => k.name === name)!.token}` });

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, stepMs: 5, logLevel: 'silent' });
  // A long stall timeout: the first render hangs until the test interrupts it.
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { STALL_TIMEOUT_MS: '120000', API_KEYS: JSON.stringify(KEYS) } });
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

async function post(key: string, b: unknown, headers: Record<string, string> = {}, as = 'ops'): Promise<number> {
  const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, ...auth(as), ...headers },
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
const waitingForGpu = (key: string, owner = 'ops') =>
  waitFor(`${key} to wait for the GPU`, async () => {
    const d = await client.workflow.getHandle(renderIdForKey(key, owner)).describe();
    return d.raw.pendingActivities?.some(
      (a) => a.activityType?.name === 'runPrompt' && a.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
    )
      ? true
      : undefined;
  });

/** At least `count` attempts wait in matching's backlog of the GPU queue at priority `key` (test/support/task-queue.ts). */
const inBacklog = (key: number, count: number) =>
  waitFor(`${count} attempt(s) in the GPU queue's backlog at priority ${key}`, async () =>
    (await backlogAtPriority(client, 'default', `${svc.taskQueue}-gpu`, key)) >= count ? true : undefined,
  );

/** When the render's completed prompt attempt started (server clock). */
async function gpuStart(key: string, owner = 'ops'): Promise<number> {
  const events = (await client.workflow.getHandle(renderIdForKey(key, owner)).fetchHistory()).events ?? [];
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
    await inBacklog(1, 1);
    // Free the GPU: the held prompt is interrupted (its render retries later, at its own priority 3).
    await fetch(`${fake.url}/interrupt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await Promise.all(pending)).toEqual([200, 200, 200, 200, 200]);

    const [u, l1, l2, l3] = await Promise.all([urgent, ...low].map((k) => gpuStart(k)));
    expect(u).toBeLessThanOrEqual(l1!);
    expect(l1).toBeLessThanOrEqual(l2!);
    expect(l2).toBeLessThanOrEqual(l3!);

    const res = await fetch(`${svc.url}/renders?limit=10`, { headers: auth('ops') });
    const list = (await res.json()) as { renders: { id: string; priority?: number }[] };
    const byId = new Map(list.renders.map((r) => [r.id, r.priority]));
    expect(byId.get(renderIdForKey(urgent, 'ops'))).toBe(1);
    expect(byId.get(renderIdForKey(low[0]!, 'ops'))).toBe(5);
    expect(byId.get(renderIdForKey(holder, 'ops'))).toBe(3);
  });

  it("clients take turns within a priority: bob's one render starts before alice's second of three that waited before it", async () => {
    const run = Date.now().toString(36);
    await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hang: { count: 1 } }) });
    const holder = `fair-${run}-holder`;
    const alice = [1, 2, 3].map((i) => `fair-${run}-alice-${i}`);
    const bob = `fair-${run}-bob`;
    const pending: Promise<number>[] = [post(holder, body(31))];
    await waitFor('the first render to hold the GPU', async () => {
      const st = (await (await fetch(`${fake.url}/__fake/stats`)).json()) as { queue: { running: string[] } };
      return st.queue.running.length === 1 ? true : undefined;
    });
    for (const [i, key] of alice.entries()) {
      pending.push(post(key, body(40 + i), {}, 'alice'));
      await waitingForGpu(key, 'alice');
    }
    pending.push(post(bob, body(50), {}, 'bob'));
    await waitingForGpu(bob, 'bob');
    await inBacklog(3, alice.length + 1);
    await fetch(`${fake.url}/interrupt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(await Promise.all(pending)).toEqual([200, 200, 200, 200, 200]);

    const [a1, a2, a3] = await Promise.all(alice.map((k) => gpuStart(k, 'alice')));
    const b = await gpuStart(bob, 'bob');
    // First in first out within alice's own renders; bob's waits for at most one of hers (FIFO: all three).
    expect(a1).toBeLessThanOrEqual(a2!);
    expect(a2).toBeLessThanOrEqual(a3!);
    expect(b).toBeLessThanOrEqual(a2!);
  });

  it('an invalid X-Priority is a 422 naming the header, and starts nothing', async () => {
    const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-priority': '7', ...auth('ops') },
      body: JSON.stringify(body(99)),
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { field?: string }).field).toBe('X-Priority');
  });
});

/** `renders …` in this process (what `comfy-durable renders` runs) with its output captured. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { write: outWrite } = process.stdout;
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { write: errWrite } = process.stderr;
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.DATA_DIR = svc.dataDir;
  process.env.TEMPORAL_TASK_QUEUE = svc.taskQueue;
  process.stdout.write = (chunk: string | Uint8Array) => out.push(String(chunk)) > 0;
  process.stderr.write = (chunk: string | Uint8Array) => err.push(String(chunk)) > 0;
  try {
    const code = await runRenders(args);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.stdout.write = outWrite;
    process.stderr.write = errWrite;
  }
}

describe('the operator CLI acts for one key (--owner)', () => {
  it("lists only that key's renders, and shows, cancels or replays another key's render as not found", async () => {
    const list = async (...extra: string[]) => {
      const r = await cli('list', '--limit', '50', '--json', ...extra);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as RenderSummary[];
    };
    const all = await list();
    const alice = await list('--owner', 'alice');
    expect(alice.length).toBeGreaterThanOrEqual(3);
    expect(alice.every((r) => r.owner === 'alice')).toBe(true);
    expect(
      all
        .filter((r) => r.owner === 'alice')
        .map((r) => r.id)
        .sort(),
    ).toEqual(alice.map((r) => r.id).sort());
    const bobs = all.find((r) => r.owner === 'bob')!;
    expect(bobs).toBeDefined();
    for (const cmd of [
      ['show', bobs.id],
      ['cancel', bobs.id],
      ['replay', bobs.id],
      ['outputs', bobs.id, '--dir', svc.dataDir],
    ]) {
      const r = await cli(...cmd, '--owner', 'alice');
      expect(r.code, `${cmd[0]}: ${r.stdout}`).toBe(1);
      expect(r.stderr).toMatch(/not found/);
    }
    const shown = await cli('show', bobs.id, '--owner', 'bob', '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect((await cli('list', '--owner', "x' OR 1=1")).code).toBe(2);
    expect((await cli('list')).stdout).toMatch(/^ID +STATUS +OUTCOME +OWNER/);
  });
});
