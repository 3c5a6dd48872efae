/**
 * comfy-durable on a real Temporal cluster: a Temporal server built from source (scripts/setup-cluster-tools.sh)
 * on PostgreSQL, set up by docker-compose.yml's own scripts (test/support/temporal-cluster.ts); blobs in a real
 * S3-compatible store (versitygw); 3 fake ComfyUIs, 3 worker processes (one per GPU, GPU_BACKENDS), 2 API
 * processes, each process with its own DATA_DIR as on separate hosts.
 *
 * Scenarios, in order, on the same cluster: 30 concurrent renders keep every GPU busy while work waits;
 * priority 1 overtakes waiting priority 5; a worker, an API process and the Temporal server each killed
 * mid-render; every render completes exactly once (the fakes' per-prompt counters), and an Idempotency-Key
 * retry through the other API process attaches to the same render.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FakeStatsSnapshot } from '../../tools/fake-comfyui/state.ts';
import { skipUnlessTools } from '../support/cluster-tools.ts';
import { postgresBinDir, startPostgres, type TestPostgres } from '../support/postgres.ts';
import { startS3Server, type S3TestServer } from '../support/s3-server.ts';
import { backlogAtPriority } from '../support/task-queue.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTemporalCluster, type TemporalCluster } from '../support/temporal-cluster.ts';

function skipCluster(): boolean {
  if (skipUnlessTools('cluster test', 'TEMPORAL_SERVER_BIN', 'TEMPORAL_SQL_TOOL_BIN', 'TEMPORAL_SCHEMA_DIR', 'VERSITYGW_BIN')) return true;
  if (postgresBinDir()) return false;
  const why = 'cluster test: PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BIN)';
  if (process.env.CI) throw new Error(why);
  console.warn(`skipping ${why}`);
  return true;
}

const GPUS = 3;
const RENDER_MS = 2_000;
const BUCKET = 'comfy-durable-cluster';
/** Compose's default task queue, whose GPU queue compose's dynamic config keeps on one partition. */
const TASK_QUEUE = 'renders';

let pg: TestPostgres;
let temporal: TemporalCluster;
let s3: S3TestServer;
let fakes: FakeComfyUI[] = [];
const workers: TestService[] = [];
const apis: TestService[] = [];

const body = (seed: number) => ({ prompt: 'cluster', model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 4, seed });

interface Answer {
  status: number;
  renderId: string | null;
  text: string;
}
async function txt2img(api: TestService, b: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${api.url}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(b),
  });
  return { status: res.status, renderId: res.headers.get('x-render-id'), text: await res.text() };
}

const stats = (f: FakeComfyUI): Promise<FakeStatsSnapshot> => fetch(`${f.url}/__fake/stats`).then((r) => r.json() as Promise<FakeStatsSnapshot>);
const allStats = (): Promise<FakeStatsSnapshot[]> => Promise.all(fakes.map(stats));
const post = (url: string, b: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The index of the fake running a prompt right now (the render under test is the only one). */
const runningOn = (): Promise<number> =>
  waitFor('a prompt running on some ComfyUI', async () => {
    const s = await allStats();
    const i = s.findIndex((x) => x.queue.running.length > 0);
    return i >= 0 ? i : undefined;
  });

/**
 * Exactly-once over all backends since the last reset: `renders` successful runs in all, no prompt id executed
 * or submitted twice anywhere.
 */
async function expectExactlyOnce(renders: number): Promise<void> {
  const s = await allStats();
  const executions: Record<string, number> = {};
  let successes = 0;
  for (const x of s) {
    for (const [id, n] of Object.entries(x.executions)) executions[id] = (executions[id] ?? 0) + n;
    for (const [id, n] of Object.entries(x.submissions)) expect(n, `prompt ${id} submitted ${n} times`).toBe(1);
    for (const outcomes of Object.values(x.outcomes)) successes += outcomes.filter((o) => o === 'success').length;
  }
  for (const [id, n] of Object.entries(executions)) expect(n, `prompt ${id} executed ${n} times`).toBe(1);
  expect(successes, 'successful runs over all ComfyUIs').toBe(renders);
}

let client: Client;

/** The render's prompt attempt waits in the GPU queue (scheduled, not started). */
const waitingForGpu = (key: string): Promise<true> =>
  waitFor(`${key} to wait for a GPU`, async () => {
    const d = await client.workflow.getHandle(renderIdForKey(key)).describe();
    return d.raw.pendingActivities?.some(
      (a) => a.activityType?.name === 'runPrompt' && a.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
    )
      ? true
      : undefined;
  });

/** Matching holds an attempt of priority `key` it can hand out (test/support/task-queue.ts says why it matters). */
const dispatchable = (key: number, what: string): Promise<true> =>
  waitFor(`${what} to be in the GPU queue's backlog (priority ${key})`, async () =>
    (await backlogAtPriority(client, temporal.namespace, `${TASK_QUEUE}-gpu`, key)) > 0 ? true : undefined,
  );

/** A history event's time, ms since the epoch (server clock). */
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  t ? Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : NaN;

/** When the render's successful prompt attempt started (server clock), once it has. */
async function gpuStart(key: string): Promise<number | undefined> {
  const events = (await client.workflow.getHandle(renderIdForKey(key)).fetchHistory()).events ?? [];
  const done = events.find((e) => e.activityTaskCompletedEventAttributes)?.activityTaskCompletedEventAttributes;
  const ev = done ? events.find((e) => Number(e.eventId) === Number(done.startedEventId)) : undefined;
  return ev ? ms(ev.eventTime) : undefined;
}

/**
 * The render's runPrompt attempts as its history tells them: when each was scheduled, started (by which worker)
 * and how it ended (completed, failed, timed out and why). Times relative to `t0`, in ms.
 */
async function attemptsOf(key: string, t0: number): Promise<string> {
  const events = (await client.workflow.getHandle(renderIdForKey(key)).fetchHistory()).events ?? [];
  const byId = new Map(events.map((e) => [Number(e.eventId), e]));
  const lines: string[] = [];
  for (const e of events) {
    const closed =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (!closed) continue;
    const started = byId.get(Number(closed.startedEventId));
    const scheduled = byId.get(Number(closed.scheduledEventId));
    const how = e.activityTaskCompletedEventAttributes
      ? 'completed'
      : e.activityTaskTimedOutEventAttributes
        ? `timed out (${proto.temporal.api.enums.v1.TimeoutType[e.activityTaskTimedOutEventAttributes.failure?.timeoutFailureInfo?.timeoutType ?? 0]})`
        : e.activityTaskFailedEventAttributes
          ? `failed: ${e.activityTaskFailedEventAttributes.failure?.message}`
          : 'cancelled';
    const rel = (x: typeof e | undefined) => (x ? ms(x.eventTime) - t0 : NaN);
    lines.push(
      `${scheduled?.activityTaskScheduledEventAttributes?.activityType?.name} scheduled ${rel(scheduled)} started ${rel(started)} by ${started?.activityTaskStartedEventAttributes?.identity} ended ${rel(e)}: ${how}`,
    );
  }
  return `${key}:\n  ${lines.join('\n  ')}`;
}

/** Every ComfyUI's runs (prompt, start, end), relative to `t0`: which prompt a GPU ran while another waited. */
async function runsOnFakes(t0: number): Promise<string> {
  return (await allStats())
    .map((s, i) => `fake ${i}: ${s.runs.map((r) => `${r.promptId.slice(0, 8)} ${r.startedAt - t0}..${r.endedAt === null ? '?' : r.endedAt - t0}`).join(', ')}`)
    .join('\n');
}

async function resetFakes(): Promise<void> {
  await Promise.all(fakes.map((f) => post(`${f.url}/__fake/reset`, {})));
}

describe.skipIf(skipCluster())('a real Temporal cluster (PostgreSQL), 3 GPUs, 3 workers, 2 APIs, S3 blobs', () => {
  beforeAll(async () => {
    [pg, s3] = await Promise.all([startPostgres({ user: 'temporal', password: 'temporal' }), startS3Server()]);
    const bucketClient = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    await bucketClient.send(new CreateBucketCommand({ Bucket: BUCKET }));
    bucketClient.destroy();
    temporal = await startTemporalCluster(pg);
    fakes = await Promise.all(Array.from({ length: GPUS }, () => startFakeComfyUI({ port: 0, renderMs: RENDER_MS, logLevel: 'silent' })));
    const env = {
      TEMPORAL_NAMESPACE: temporal.namespace,
      BLOB_STORE: 's3',
      S3_BUCKET: BUCKET,
      S3_ENDPOINT: s3.endpoint,
      S3_REGION: s3.region,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      // A dead worker is noticed within seconds; hung prompts (the priority scenario) are not stalls.
      HEARTBEAT_TIMEOUT_MS: '5000',
      STALL_TIMEOUT_MS: '120000',
    };
    const common = { temporalAddress: temporal.address, comfyUrl: fakes.map((f) => f.url).join(','), taskQueue: TASK_QUEUE, readyTimeoutMs: 240_000 };
    // One at a time: each worker bundles the workflow code at start, which is CPU-bound on a 2-core machine.
    for (const i of fakes.keys()) workers.push(await startService({ ...common, mode: 'worker', env: { ...env, GPU_BACKENDS: `comfyui-${i}` } }));
    for (let i = 0; i < 2; i++) apis.push(await startService({ ...common, mode: 'api', env }));
    client = new Client({ connection: await Connection.connect({ address: temporal.address }), namespace: temporal.namespace });
  }, 600_000);

  afterAll(async () => {
    await client?.connection.close();
    await Promise.all([...apis, ...workers].map((s) => s.kill('SIGKILL')));
    await Promise.all(fakes.map((f) => f.close()));
    await temporal?.stop();
    await Promise.all([pg?.stop(), s3?.stop()]);
  });

  it('30 concurrent renders through both APIs: spread over all GPUs, none idle while work waits, each rendered once', async () => {
    await resetFakes();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => txt2img(apis[i % 2]!, body(1000 + i))));
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(200));
    await expectExactlyOnce(30);

    const runs = (await allStats()).map((s) => s.runs.map((r) => ({ start: r.startedAt, end: r.endedAt! })));
    const durations = runs
      .flat()
      .map((r) => r.end - r.start)
      .sort((a, b) => a - b);
    const median = durations[Math.floor(durations.length / 2)]!;
    const firstStart = Math.min(...runs.flat().map((r) => r.start));
    const lastStart = Math.max(...runs.flat().map((r) => r.start));
    for (const [b, list] of runs.entries()) {
      // Late binding: a ComfyUI only ever gets a prompt when it is free.
      for (let i = 1; i < list.length; i++) expect(list[i]!.start, `backend ${b} ran two prompts at once`).toBeGreaterThanOrEqual(list[i - 1]!.end);
      expect(list.length, `backend ${b} ran ${list.length} of 30`).toBeGreaterThanOrEqual(5);
      // While renders waited (until the last one started), every gap on this GPU is far shorter than one render.
      const idle = [list[0]!.start - firstStart, ...list.slice(1).map((r, i) => r.start - list[i]!.end), Math.max(0, lastStart - list.at(-1)!.end)];
      expect(Math.max(...idle), `backend ${b} idle gaps ${JSON.stringify(idle)} vs median render ${median} ms`).toBeLessThan(median);
    }
  }, 240_000);

  it('priority 1 overtakes waiting priority-5 renders when a GPU frees up', async () => {
    await resetFakes();
    const t0 = Date.now();
    const run = t0.toString(36);
    // Hold every GPU with a hanging prompt.
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { hang: { count: 1 } })));
    const pending: Promise<Answer>[] = fakes.map((_, i) => txt2img(apis[i % 2]!, body(2000 + i), { 'idempotency-key': `hold-${run}-${i}` }));
    await waitFor('every GPU to hold a prompt', async () => (await allStats()).every((s) => s.queue.running.length === 1));
    const low = [0, 1, 2, 3].map((i) => `low-${run}-${i}`);
    for (const [i, key] of low.entries()) {
      pending.push(txt2img(apis[0]!, body(2100 + i), { 'idempotency-key': key, 'x-priority': '5' }));
      await waitingForGpu(key);
    }
    const urgent = `urgent-${run}`;
    pending.push(txt2img(apis[1]!, { ...body(2200), priority: 1 }, { 'idempotency-key': urgent }));
    await waitingForGpu(urgent);
    await dispatchable(1, urgent);
    // Free ONE GPU: the next prompt it takes is the urgent one; then free the others.
    await post(`${fakes[0]!.url}/interrupt`, {});
    const urgentStart = await waitFor('the urgent render to start', () => gpuStart(urgent));
    await Promise.all(fakes.slice(1).map((f) => post(`${f.url}/interrupt`, {})));
    const answers = await Promise.all(pending);
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const starts = await Promise.all(low.map(gpuStart));
    if (!starts.every((s) => s! > urgentStart)) {
      // Why, from the histories and the ComfyUIs' own records (a failure under load must explain itself).
      const keys = [...fakes.keys()].map((i) => `hold-${run}-${i}`).concat(low, urgent);
      const why = [...(await Promise.all(keys.map((k) => attemptsOf(k, t0)))), await runsOnFakes(t0)].join('\n');
      for (const [i, key] of low.entries())
        expect(starts[i], `${key} started before the urgent render (ms from t0 = ${t0})\n${why}`).toBeGreaterThan(urgentStart);
    }
  }, 240_000);

  it('a worker killed mid-render: the render completes once, followed by another worker', async () => {
    await resetFakes();
    // Slow enough that the kill lands mid-render and a re-attaching attempt still finds the prompt running.
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: { renderMs: 15_000 } })));
    const pending = txt2img(apis[0]!, body(3000), { 'idempotency-key': `worker-kill-${Date.now().toString(36)}` });
    const on = await runningOn();
    await workers[on]!.kill('SIGKILL');
    const answer = await pending;
    expect(answer.status, answer.text.slice(0, 500)).toBe(200);
    await expectExactlyOnce(1);
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: null })));
    await workers[on]!.restart();
  }, 240_000);

  it('an API process killed mid-render: the Idempotency-Key retry through the other API attaches, rendered once', async () => {
    await resetFakes();
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: { renderMs: 6_000 } })));
    const key = `api-kill-${Date.now().toString(36)}`;
    const first = txt2img(apis[0]!, body(4000), { 'idempotency-key': key }).catch((err: unknown) => err);
    await runningOn();
    await apis[0]!.kill('SIGKILL');
    expect(await first, 'the client lost its connection').toBeInstanceOf(Error);
    const retry = await txt2img(apis[1]!, body(4000), { 'idempotency-key': key });
    expect(retry.status, retry.text.slice(0, 500)).toBe(200);
    expect(retry.renderId).toBe(renderIdForKey(key));
    await expectExactlyOnce(1);
    // Once done, a retry through either API is the same render again, not a new one.
    await apis[0]!.restart();
    const again = await txt2img(apis[0]!, body(4000), { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.renderId).toBe(renderIdForKey(key));
    await expectExactlyOnce(1);
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: null })));
  }, 240_000);

  it('the Temporal server restarted mid-render (same PostgreSQL): the render completes once', async () => {
    await resetFakes();
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: { renderMs: 6_000 } })));
    const key = `temporal-restart-${Date.now().toString(36)}`;
    const pending = txt2img(apis[1]!, body(5000), { 'idempotency-key': key });
    await runningOn();
    await temporal.restart('SIGKILL');
    const answer = await pending;
    expect(answer.status, answer.text.slice(0, 500)).toBe(200);
    expect(answer.renderId).toBe(renderIdForKey(key));
    await expectExactlyOnce(1);
    await Promise.all(fakes.map((f) => post(`${f.url}/__fake/faults`, { slow: null })));
  }, 240_000);
});
