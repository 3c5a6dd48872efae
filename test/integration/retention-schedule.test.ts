/**
 * Retention without an operator: the workers create the Temporal Schedule `comfy-durable-retention`
 * (idempotently, however many start), and a run of it (triggered here instead of waiting hours) deletes an old
 * render and its blobs while a fresh render and its blobs are kept. Against real Temporal, with both blob
 * stores: the filesystem one and S3 (a real versitygw server; skipped outside CI when it is not built).
 */
import path from 'node:path';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { S3BlobStore } from '../../src/blobs/s3-store.ts';
import type { BlobStore } from '../../src/blobs/store.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { createLogger } from '../../src/log.ts';
import type { RetentionRunResult } from '../../src/contracts/activities.ts';
import { ensureRetentionSchedule, RETENTION_SCHEDULE_ID, retentionScheduleId } from '../../src/retention/schedule.ts';
import { metricValue } from '../faults/helpers.ts';
import { skipUnlessTools } from '../support/cluster-tools.ts';
import { redSquare } from '../support/fixtures.ts';
import { startS3Server, type S3TestServer } from '../support/s3-server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

/** Short enough to wait for, long enough that the fresh render (seconds old at the prune) is well inside it. */
const RETENTION_S = 15;
const SMALL = { model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 1 };
const logger = createLogger('silent');

let fake: FakeComfyUI;
beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, logLevel: 'silent' });
});
afterAll(async () => {
  await fake?.close();
});

/** Polls `check` until it returns a value, at most `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface StoreSetup {
  env: Record<string, string>;
  /** The service's blob store, seen from the test. */
  open(dataDir: string): BlobStore;
  close(): Promise<void>;
}

async function fsSetup(): Promise<StoreSetup> {
  return { env: {}, open: (dataDir) => new FsBlobStore(path.join(dataDir, 'blobs')), close: async () => undefined };
}

async function s3Setup(): Promise<StoreSetup> {
  const server: S3TestServer = await startS3Server();
  const bucket = 'retention';
  const stores: S3BlobStore[] = [];
  const open = (): S3BlobStore => {
    const s = new S3BlobStore({
      bucket,
      prefix: 'svc/',
      client: {
        endpoint: server.endpoint,
        region: server.region,
        forcePathStyle: true,
        credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      },
    });
    stores.push(s);
    return s;
  };
  await open().client.send(new CreateBucketCommand({ Bucket: bucket }));
  return {
    env: {
      BLOB_STORE: 's3',
      S3_BUCKET: bucket,
      S3_PREFIX: 'svc/',
      S3_ENDPOINT: server.endpoint,
      S3_REGION: server.region,
      AWS_ACCESS_KEY_ID: server.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    },
    open,
    close: async () => {
      for (const s of stores) s.client.destroy();
      await server.stop();
    },
  };
}

const variants: Array<[string, () => Promise<StoreSetup>, boolean]> = [
  ['filesystem', fsSetup, false],
  ['S3', s3Setup, skipUnlessTools('retention schedule on S3', 'VERSITYGW_BIN')],
];

describe.each(variants)('retention schedule, %s blob store', (_name, setup, skip) => {
  let temporal: TestTemporal;
  let svc: TestService;
  let store: StoreSetup;
  let blobs: BlobStore;
  let connection: Connection;
  let client: Client;

  beforeAll(async () => {
    if (skip) return;
    [temporal, store] = await Promise.all([startTestTemporal(), setup()]);
    svc = await startService({
      temporalAddress: temporal.address,
      comfyUrl: fake.url,
      env: { ...store.env, RENDER_RETENTION_DAYS: String(RETENTION_S / 86_400) },
    });
    blobs = store.open(svc.dataDir);
    connection = await Connection.connect({ address: temporal.address });
    client = new Client({ connection, namespace: 'default' });
  }, 180_000);

  afterAll(async () => {
    await svc?.kill('SIGKILL');
    await connection?.close();
    await temporal?.stop();
    await store?.close();
  });

  const scheduleId = (): string => retentionScheduleId(svc.taskQueue);

  const listed = async (): Promise<Set<string>> => {
    const out = new Set<string>();
    for await (const b of blobs.list()) out.add(b.sha256);
    return out;
  };

  async function post(route: string, body: unknown): Promise<{ status: number; renderId: string }> {
    const res = await fetch(`${svc.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await res.arrayBuffer();
    return { status: res.status, renderId: res.headers.get('x-render-id') ?? '' };
  }

  it.skipIf(skip)(
    'the worker created the schedule: every 6 h by default, overlapping runs skipped; more workers create no second one',
    async () => {
      const d = await client.schedule.getHandle(scheduleId()).describe();
      expect(d.spec.intervals?.map((i) => i.every)).toEqual([6 * 3_600_000]);
      expect(d.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
      expect(d.action.type === 'startWorkflow' && d.action.workflowType).toBe('retention');
      expect(d.action.type === 'startWorkflow' && d.action.taskQueue).toBe(svc.taskQueue);

      // Three more workers starting at once, with the same settings: all fine, still one schedule.
      const same = { taskQueue: svc.taskQueue, everyMs: 6 * 3_600_000, logger };
      expect(await Promise.all([1, 2, 3].map(() => ensureRetentionSchedule(client, same)))).toEqual(['unchanged', 'unchanged', 'unchanged']);
      const ids: string[] = [];
      for await (const s of client.schedule.list()) ids.push(s.scheduleId);
      expect(ids).toEqual([scheduleId()]);
      // A worker with another interval brings it in line; `off` deletes it; a worker starting again recreates it.
      expect(await ensureRetentionSchedule(client, { ...same, everyMs: 3_600_000 })).toBe('updated');
      expect((await client.schedule.getHandle(scheduleId()).describe()).spec.intervals?.[0]?.every).toBe(3_600_000);
      expect(await ensureRetentionSchedule(client, { ...same, everyMs: undefined })).toBe('deleted');
      expect(await ensureRetentionSchedule(client, { ...same, everyMs: undefined })).toBe('absent');
      expect(await ensureRetentionSchedule(client, same)).toBe('created');
    },
    60_000,
  );

  it.skipIf(skip)(
    "a worker on another task queue never moves this queue's schedule: it has its own",
    async () => {
      const other = { taskQueue: `${svc.taskQueue}-other`, everyMs: 3 * 3_600_000, logger };
      const queueOf = async (id: string) => {
        const d = await client.schedule.getHandle(id).describe();
        return d.action.type === 'startWorkflow' ? d.action.taskQueue : undefined;
      };
      expect(await ensureRetentionSchedule(client, other)).toBe('created');
      expect(await ensureRetentionSchedule(client, other)).toBe('unchanged');
      expect(await queueOf(scheduleId())).toBe(svc.taskQueue);
      expect(await queueOf(retentionScheduleId(other.taskQueue))).toBe(other.taskQueue);
      // Turning the other queue's retention off deletes only its own schedule.
      expect(await ensureRetentionSchedule(client, { ...other, everyMs: undefined })).toBe('deleted');
      expect(await queueOf(scheduleId())).toBe(svc.taskQueue);
      // A schedule an older version moved to another queue is brought back to the queue in its id.
      await client.schedule.getHandle(scheduleId()).update((prev) => ({ ...prev, action: { ...prev.action, taskQueue: other.taskQueue } }));
      expect(await ensureRetentionSchedule(client, { taskQueue: svc.taskQueue, everyMs: 6 * 3_600_000, logger })).toBe('updated');
      expect(await queueOf(scheduleId())).toBe(svc.taskQueue);
      // The default queue keeps the plain id older versions created.
      expect(retentionScheduleId('renders')).toBe(RETENTION_SCHEDULE_ID);
    },
    60_000,
  );

  it.skipIf(skip)(
    'a run of the schedule, without an operator, deletes an old render and its blobs and keeps a fresh one',
    async () => {
      const old = await post('/sdapi/v1/img2img', { ...SMALL, prompt: 'old', seed: 11, init_images: [redSquare(48).toString('base64')] });
      expect(old.status).toBe(200);
      const oldBlobs = await listed();
      expect(oldBlobs.size).toBeGreaterThanOrEqual(2);
      const closed = (await client.workflow.getHandle(old.renderId).describe()).closeTime!;
      // Until the old render is past retention: an event of the clock, which no render can hurry.
      await until('the old render to be past retention', 60_000, async () => (Date.now() > closed.getTime() + RETENTION_S * 1000 + 500 ? true : undefined));

      const fresh = await post('/sdapi/v1/txt2img', { ...SMALL, prompt: 'fresh', seed: 12 });
      expect(fresh.status).toBe(200);
      const freshBlobs = [...(await listed())].filter((b) => !oldBlobs.has(b));
      expect(freshBlobs.length).toBeGreaterThanOrEqual(1);

      await client.schedule.getHandle(scheduleId()).trigger();
      const runId = await until('the retention run to complete', 90_000, async () => {
        for await (const w of client.workflow.list({ query: `WorkflowType = 'retention' AND ExecutionStatus = 'Completed'` })) return w.workflowId;
        return undefined;
      });
      expect(runId.startsWith(scheduleId())).toBe(true);
      const result = (await client.workflow.getHandle(runId).result()) as RetentionRunResult;
      expect(result.rendersDeleted).toEqual([old.renderId]);
      expect(result.rendersDeletedCount).toBe(1);
      expect(result.blobsDeleted).toBe(oldBlobs.size);

      const after = await listed();
      expect([...oldBlobs].filter((b) => after.has(b))).toEqual([]);
      expect(freshBlobs.filter((b) => !after.has(b))).toEqual([]);
      // Temporal deletes the execution in the background.
      await until('the old render to be gone', 30_000, async () => ((await fetch(`${svc.url}/renders/${old.renderId}`)).status === 404 ? true : undefined));
      expect((await fetch(`${svc.url}/renders/${fresh.renderId}`)).status).toBe(200);
      expect((await fetch(`${svc.url}/renders/${fresh.renderId}/outputs/0`)).status).toBe(200);

      // The retention run is no render: not listed, not counted.
      const page = (await (await fetch(`${svc.url}/renders?limit=50`)).json()) as { renders: Array<{ id: string }> };
      expect(page.renders.map((r) => r.id)).toEqual([fresh.renderId]);
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metricValue(metrics, 'comfy_durable_renders_completed_total', { model: 'unknown' })).toBeUndefined();
      expect(metricValue(metrics, 'comfy_durable_renders_completed_total', { model: 'imagegen-flux-schnell' })).toBe(2);
    },
    180_000,
  );
});
