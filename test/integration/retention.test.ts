/**
 * Retention and the red-team findings that need real Temporal: `renders prune` (dry run, then for real: what
 * it freed, blobs of remaining renders kept), a replay of a pruned render failing clearly, collected outputs
 * deleted from a co-located ComfyUI's output folder, the blob store size metric, an unreadable cursor (400),
 * reordered keys under one Idempotency-Key (no 409), and outputs of a key re-run after a failure (no stale cache).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { metricValue, setFaults, waitFor } from '../faults/helpers.ts';
import { redSquare } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tsxLoader = pathToFileURL(path.join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

const SMALL = { model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 1 };

beforeAll(async () => {
  [temporal, fake] = await Promise.all([startTestTemporal(), startFakeComfyUI({ port: 0, logLevel: 'silent' })]);
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { COMFYUI_OUTPUT_DIR: path.join(fake.dataDir, 'output') } });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

async function post(route: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${svc.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json, renderId: res.headers.get('x-render-id') ?? '' };
}

async function renders(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', tsxLoader, path.join(root, 'src', 'cli', 'main.ts'), 'renders', ...args], {
    cwd: root,
    env: { ...process.env, TEMPORAL_ADDRESS: temporal.address, DATA_DIR: svc.dataDir, LOG_LEVEL: 'silent' },
  });
  return stdout;
}

const blobFiles = (): string[] => {
  const dir = path.join(svc.dataDir, 'blobs');
  return existsSync(dir)
    ? readdirSync(dir, { recursive: true })
        .map(String)
        .filter((n) => /[0-9a-f]{64}$/.test(n))
    : [];
};
const outputFiles = (): string[] =>
  readdirSync(path.join(fake.dataDir, 'output'), { recursive: true })
    .map(String)
    .filter((n) => /\.png$/.test(n));

describe('retention', () => {
  it('collected outputs are deleted from the co-located ComfyUI, and the blob store size is a metric', async () => {
    const r = await post('/sdapi/v1/img2img', { ...SMALL, prompt: 'retention in', seed: 1, init_images: [redSquare(64).toString('base64')] });
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    expect(outputFiles()).toEqual([]);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metricValue(metrics, 'comfy_durable_blob_store_bytes')).toBeGreaterThan(0);
  });

  it('`renders prune --older-than` frees the blob store (dry run first); a replay of a pruned render fails clearly', async () => {
    const a = await post('/sdapi/v1/txt2img', { ...SMALL, prompt: 'to prune', seed: 2 });
    expect(a.status).toBe(200);
    const before = blobFiles();
    expect(before.length).toBeGreaterThanOrEqual(3);
    // Ended more than 1 s ago: wait for that to be true (an event of the clock, not a render).
    await new Promise((r) => setTimeout(r, 1_500));

    const dry = await renders('prune', '--older-than', '1s', '--dry-run', '--json');
    const d = JSON.parse(dry) as { dryRun: boolean; blobsDeleted: number; bytesFreed: number; rendersDeleted: string[] };
    expect(d.dryRun).toBe(true);
    expect(d.rendersDeleted).toContain(a.renderId);
    expect(d.blobsDeleted).toBe(before.length);
    expect(d.bytesFreed).toBeGreaterThan(0);
    expect(blobFiles()).toEqual(before);

    const text = await renders('prune', '--older-than', '1s');
    expect(text).toMatch(new RegExp(`blobs: ${before.length} \\(${d.bytesFreed} bytes\\) freed`));
    expect(blobFiles()).toEqual([]);

    // Temporal deletes executions in the background: wait until it has. The dev server took 19-32 s here (three
    // runs next to two CPU hogs); a 30 s bound made this test fail now and then.
    const deleteBy = Date.now() + 90_000;
    while ((await fetch(`${svc.url}/renders/${a.renderId}`)).status !== 404) {
      if (Date.now() > deleteBy) throw new Error('the pruned render was not deleted within 90 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const replay = await post(`/renders/${a.renderId}/replay`, {});
    expect(replay.status).toBe(404);
    expect(replay.json.detail).toMatch(/retention period|renders prune/);
  }, 150_000);

  it('prune keeps what remaining renders reference; a replay whose inputs were pruned is refused clearly', async () => {
    const kept = await post('/sdapi/v1/img2img', { ...SMALL, prompt: 'kept', seed: 3, init_images: [redSquare(32).toString('base64')] });
    expect(kept.status).toBe(200);
    const before = blobFiles();
    const out = JSON.parse(await renders('prune', '--older-than', '1h', '--json')) as { blobsDeleted: number };
    expect(out.blobsDeleted).toBe(0);
    expect(blobFiles()).toEqual(before);
    // Its input image gone (an older prune, a lost disk): the replay says so instead of failing in ComfyUI.
    for (const f of before) rmSync(path.join(svc.dataDir, 'blobs', f));
    const replay = await post(`/renders/${kept.renderId}/replay`, {});
    expect(replay.status).toBe(422);
    expect(replay.json.detail).toMatch(/pruned/);
  }, 120_000);
  it('prune keeps the outputs a running render has already stored (red-team M4)', async () => {
    const before = new Set(blobFiles());
    // Both items stop in SaveImage; the first is let go, so its images are stored while the render still runs.
    await setFaults(fake.url, { hold: [{ nodeClass: 'SaveImage' }, { nodeClass: 'SaveImage' }] });
    const release = () =>
      waitFor(
        'a held node to release',
        async () => ((await (await fetch(`${fake.url}/__fake/release`, { method: 'POST' })).json()) as { released: boolean }).released,
        60_000,
        50,
      );
    const pending = post('/sdapi/v1/txt2img', { ...SMALL, prompt: 'running while pruned', seed: 6, n_iter: 2 });
    await release();
    const stored = await waitFor(
      "the first item's output to be stored",
      () => {
        const added = blobFiles().filter((f) => !before.has(f));
        return added.length > 0 ? added : undefined;
      },
      60_000,
    );
    // Older than the cutoff by the time prune runs: an event of the clock.
    await new Promise((r) => setTimeout(r, 1_500));
    const out = JSON.parse(await renders('prune', '--older-than', '1s', '--json')) as { rendersKept: number };
    expect(out.rendersKept).toBeGreaterThanOrEqual(1);
    expect(stored.filter((f) => !blobFiles().includes(f))).toEqual([]);
    await release();
    const done = await pending;
    expect(done.status, JSON.stringify(done.json).slice(0, 300)).toBe(200);
    expect(done.json.images).toHaveLength(2);
    for (const i of [0, 1]) expect((await fetch(`${svc.url}/renders/${done.renderId}/outputs/${i}`)).status).toBe(200);
  }, 180_000);
});

describe('red-team findings against real Temporal', () => {
  it('an unreadable cursor is a 400', async () => {
    const res = await fetch(`${svc.url}/renders?cursor=AAAA`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { field: string }).field).toBe('cursor');
  });

  it('the same body with its keys reordered attaches to the render (no 409)', async () => {
    const key = `reorder-${Date.now()}`;
    const a = await post('/sdapi/v1/txt2img', `{"prompt":"reorder","seed":4,"model":"imagegen-flux-schnell","width":64,"height":64,"steps":1}`, {
      'idempotency-key': key,
    });
    const b = await post('/sdapi/v1/txt2img', `{"steps":1,"height":64,"width":64,"model":"imagegen-flux-schnell","seed":4,"prompt":"reorder"}`, {
      'idempotency-key': key,
    });
    expect(a.status).toBe(200);
    expect(b.status, JSON.stringify(b.json).slice(0, 300)).toBe(200);
    expect(b.renderId).toBe(a.renderId);
    expect(b.json.images).toEqual(a.json.images);
  });

  it('outputs of an Idempotency-Key render that failed and ran again are the new ones (no stale cache)', async () => {
    const key = `rerun-${Date.now()}`;
    const body = { ...SMALL, prompt: 'rerun', seed: 5 };
    await setFaults(fake.url, { executionError: { type: 'exception', count: 1 } });
    const failed = await post('/sdapi/v1/txt2img', body, { 'idempotency-key': key });
    expect(failed.status).toBe(500);
    // Someone looks at the failed render (the gallery does): nothing cached for it may outlive the re-run.
    expect((await fetch(`${svc.url}/renders/${failed.renderId}/outputs/0`)).status).toBe(404);
    const again = await post('/sdapi/v1/txt2img', body, { 'idempotency-key': key });
    expect(again.status).toBe(200);
    expect(again.renderId).toBe(failed.renderId);
    const out = await fetch(`${svc.url}/renders/${again.renderId}/outputs/0`);
    expect(out.status).toBe(200);
    expect(Buffer.from(await out.arrayBuffer()).toString('base64')).toBe(again.json.images[0]);
  });
});
