/**
 * Bad-input fuzzing of the real front (fast-check): random JSON, A1111-shaped bodies with one field wrong,
 * malformed and hostile images, and raw garbage bodies, thrown at the service running as a child process
 * against Temporal and the fake ComfyUI. Properties:
 * - never a 5xx;
 * - a render starts only for input that renders: every answer carrying a render id is a 200, and in the end
 *   the workflows on the task queue are exactly the render ids answered with images;
 * - every error is A1111's JSON envelope with a `detail` text;
 * - the process stays up.
 * Valid bodies do occur (and render, cheaply: 64 px, one step); most are invalid by construction.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { readFileSync } from 'node:fs';
import { makePng, redSquare } from '../support/fixtures.ts';
import { pngBomb } from '../support/png-bomb.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

/** Render ids the front answered with; the workflows that exist must be exactly these. */
const rendered = new Set<string>();
const problems: string[] = [];
let requests = 0;

const MAX_IMAGE_BYTES = 64 * 1024;

beforeAll(async () => {
  [temporal, fake] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fuzz-comfy-')), logLevel: 'silent' }),
  ]);
  svc = await startService({
    temporalAddress: temporal.address,
    comfyUrl: fake.url,
    env: { MAX_IMAGE_BYTES: String(MAX_IMAGE_BYTES), BODY_LIMIT_BYTES: String(1024 * 1024), MAX_BATCH: '2', DEFAULT_MODEL: 'imagegen-flux-schnell' },
  });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

type Route = 'txt2img' | 'img2img';

/** Posts one body and checks the per-request properties; records problems instead of throwing mid-run. */
async function send(route: Route, body: string, contentType = 'application/json'): Promise<number> {
  requests++;
  const res = await fetch(`${svc.url}/sdapi/v1/${route}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await res.text();
  const renderId = res.headers.get('x-render-id');
  const sample = body.length > 300 ? `${body.slice(0, 300)}…(${body.length} chars)` : body;
  if (res.status >= 500) problems.push(`${route} ${res.status} for ${sample}: ${text.slice(0, 300)}`);
  if (renderId) {
    if (res.status !== 200) problems.push(`${route}: render ${renderId} started for input that did not render (${res.status}: ${text.slice(0, 300)}) body ${sample}`);
    else rendered.add(renderId);
  }
  if (res.status >= 400) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const detail = (parsed as { detail?: unknown } | undefined)?.detail;
    if (typeof detail !== 'string' || detail === '') problems.push(`${route} ${res.status} without a detail text: ${text.slice(0, 200)}`);
  }
  return res.status;
}

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

/** A body that renders (cheaply); each property corrupts some of it. */
const BASE = { prompt: 'fuzz', model: 'imagegen-flux-schnell', width: 64, height: 64, steps: 1, seed: 1 };

const weird = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1e308, -1e308, 2 ** 53, 2 ** 64, 0.5, -0.0, '', ' ', 'NaN', 'Infinity', '-1', '1e9', '0x10', '७', '\u0000', '😀'),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 40 }),
  fc.array(fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.integer(), fc.string({ maxLength: 8 })), { maxKeys: 3 }),
);

const FIELDS = [
  'prompt', 'negative_prompt', 'seed', 'steps', 'cfg_scale', 'distilled_cfg_scale', 'width', 'height', 'sampler_name', 'sampler_index',
  'scheduler', 'batch_size', 'n_iter', 'batch_count', 'model', 'denoising_strength', 'override_settings', 'styles', 'extra_images',
  'init_images', 'mask', 'send_images', 'alwayson_scripts', 'clip_skip', 'subseed', 'restore_faces', 'script_args',
] as const;

const pngBytes = redSquare(16);
/** Hostile or broken images: random bytes, truncations, a PNG whose header claims 100000×100000, wrong data URLs. */
const badImage = fc.oneof(
  fc.uint8Array({ minLength: 0, maxLength: 256 }).map(b64),
  fc.integer({ min: 1, max: pngBytes.length - 1 }).map((n) => b64(pngBytes.subarray(0, n))),
  fc.constant(b64(hugeDimensionsPng())),
  fc.constant(b64(Buffer.concat([pngBytes, Buffer.alloc(MAX_IMAGE_BYTES)]))),
  fc.constantFrom('', '%%%', 'data:', 'data:image/png;base64,', 'data:text/plain;base64,aGVsbG8=', 'http://127.0.0.1:1/x.png', 'file:///etc/passwd', '../../etc/passwd'),
  fc.string({ maxLength: 60 }),
  fc.constant(`data:image/png;base64,${b64(pngBytes)}`), // a valid one, now and then
);

/** A PNG signature + IHDR claiming 100000×100000 and nothing else (a decompression-bomb shape). */
function hugeDimensionsPng(): Buffer {
  const png = Buffer.from(makePng(1, 1, () => [0, 0, 0, 255]));
  png.writeUInt32BE(100_000, 16);
  png.writeUInt32BE(100_000, 20);
  return png;
}

/** Peak resident memory of the service process (VmHWM), in bytes: memory work, independent of CPU load. */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

const NUMBER_FIELDS = ['cfg_scale', 'denoising_strength', 'eta', 'steps', 'seed', 'width', 'subseed_strength', 'distilled_cfg_scale'] as const;

describe('red-team classes: bombs, long numbers, deep nesting, huge option bodies', () => {
  // First, while the service's memory peak is still its start-up one: what a bomb would add shows.
  it('PNG inflate bombs (interlaced too, as image or mask) are refused under a memory budget', async () => {
    const pid = svc.child.pid!;
    const before = peakRss(pid);
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.constantFrom('init_images', 'mask'), fc.constantFrom(40, 48, 56), async (interlaced, field, mib) => {
        const bomb = b64(pngBomb({ inflatedBytes: mib * 1024 * 1024, interlaced, width: 2, height: 2 }));
        const body = field === 'mask' ? { ...BASE, init_images: [b64(pngBytes)], mask: bomb } : { ...BASE, init_images: [bomb] };
        const status = await send('img2img', JSON.stringify(body));
        if (status !== 400) problems.push(`a ${mib} MiB ${interlaced ? 'interlaced ' : ''}bomb as ${field} got ${status}`);
      }),
      { numRuns: 12 },
    );
    // Each bomb inflates to 40-56 MiB; decoded with its header's limit, it adds nothing like that.
    const grew = peakRss(pid) - before;
    expect(grew, `peak RSS grew by ${Math.round(grew / 1024 / 1024)} MiB`).toBeLessThan(32 * 1024 * 1024);
    expect(problems).toEqual([]);
  }, 120_000);

  it('long numeric strings are refused under a time budget (no quadratic parsing)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Route>('txt2img', 'img2img'),
        fc.subarray([...NUMBER_FIELDS], { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1_000, max: 64_000 }),
        fc.constantFrom('x', '.', 'e', ' 1', '..', '-'),
        async (route, fields, digits, junk) => {
          const value = `${'1'.repeat(digits)}${junk}`;
          const body: Record<string, unknown> = { ...BASE, ...Object.fromEntries(fields.map((f) => [f, value])) };
          if (route === 'img2img') body.init_images = [b64(pngBytes)];
          const t0 = performance.now();
          const status = await send(route, JSON.stringify(body));
          const ms = performance.now() - t0;
          if (status < 400 || status >= 500) problems.push(`${digits}-digit ${fields.join(',')} got ${status}`);
          // The old parser took ~6 s for one 64 000-digit field, 45 s for two; linear parsing takes milliseconds.
          // 5 s is a generous multiple of that even next to a CPU hog.
          if (ms > 5_000) problems.push(`${digits}-digit ${fields.join(',')} took ${Math.round(ms)} ms`);
        },
      ),
      { numRuns: 30 },
    );
    expect(problems).toEqual([]);
  }, 240_000);

  it('deeply nested JSON in any field is a 4xx, never a 5xx or a render', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Route>('txt2img', 'img2img'), fc.constantFrom(...FIELDS), fc.integer({ min: 40, max: 20_000 }), async (route, field, depth) => {
        const deep = `${'{"a":['.repeat(depth)}1${']}'.repeat(depth)}`;
        const rest = JSON.stringify(route === 'img2img' ? { ...BASE, init_images: [b64(pngBytes)] } : BASE).slice(1, -1);
        const status = await send(route, `{${rest},${JSON.stringify(field)}:${deep}}`);
        if (status < 400 || status >= 500) problems.push(`depth ${depth} in ${field} got ${status}`);
      }),
      { numRuns: 40 },
    );
    expect(problems).toEqual([]);
  }, 120_000);

  it('huge option bodies leave the options store small and typed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3_000 }),
        fc.integer({ min: 1, max: 300 }),
        fc.constantFrom<unknown>(1, 'x', { toString: 1 }, [1, 2], null, true),
        async (keys, valueLength, oddValue) => {
          const patch: Record<string, unknown> = { sd_vae: 'ae.safetensors' };
          for (let i = 0; i < keys; i++) patch[`junk_${i}`] = 'v'.repeat(valueLength);
          patch[`odd_${keys}`] = oddValue;
          requests++;
          const res = await fetch(`${svc.url}/sdapi/v1/options`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(patch) });
          if (res.status >= 500) problems.push(`options with ${keys} keys got ${res.status}`);
          const stored = await (await fetch(`${svc.url}/sdapi/v1/options`)).text();
          if (stored.length > 4_096) problems.push(`options grew to ${stored.length} characters after ${keys} junk keys`);
        },
      ),
      { numRuns: 20 },
    );
    const bad = await fetch(`${svc.url}/sdapi/v1/options`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sd_model_checkpoint: { toString: 1 } }) });
    expect(bad.status).toBe(422);
    expect(problems).toEqual([]);
  }, 120_000);
});

describe('A1111 front under random and malformed input', () => {
  it('arbitrary JSON values as the body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Route>('txt2img', 'img2img'), fc.jsonValue({ maxDepth: 3 }), async (route, value) => {
        await send(route, JSON.stringify(value) ?? 'null');
      }),
      // Random objects are mostly valid (unknown keys are ignored) and render at the default 512 px: fewer runs.
      { numRuns: 50 },
    );
    expect(problems).toEqual([]);
  }, 60_000);

  it('A1111 bodies with fields of the wrong type or out of range', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Route>('txt2img', 'img2img'),
        fc.dictionary(fc.constantFrom(...FIELDS), weird, { minKeys: 1, maxKeys: 4 }),
        async (route, corrupt) => {
          const body: Record<string, unknown> = { ...BASE, ...corrupt };
          if (route === 'img2img' && !('init_images' in corrupt)) body.init_images = [b64(pngBytes)];
          await send(route, JSON.stringify(body));
        },
      ),
      { numRuns: 150 },
    );
    expect(problems).toEqual([]);
  }, 90_000);

  it('malformed and hostile images (init image, mask, reference images)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('init_images', 'mask', 'extra_images'),
        fc.array(badImage, { minLength: 1, maxLength: 4 }),
        async (field, images) => {
          if (field === 'init_images') await send('img2img', JSON.stringify({ ...BASE, init_images: images }));
          else if (field === 'mask') await send('img2img', JSON.stringify({ ...BASE, init_images: [b64(pngBytes)], mask: images[0] }));
          else await send('txt2img', JSON.stringify({ ...BASE, model: 'imagegen-qwen-image-edit', extra_images: images }));
        },
      ),
      { numRuns: 80 },
    );
    expect(problems).toEqual([]);
  }, 60_000);

  it('raw garbage bodies and content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Route>('txt2img', 'img2img'),
        fc.oneof(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')), fc.constantFrom('{', '[', '{"prompt":', '{"prompt": "x",}', 'null', '""', '{}}')),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/octet-stream', 'multipart/form-data; boundary=x', 'application/json; charset=latin1'),
        async (route, raw, contentType) => {
          await send(route, raw, contentType);
        },
      ),
      { numRuns: 60 },
    );
    expect(problems).toEqual([]);
  }, 60_000);

  it('the process stayed up, and only inputs that rendered started a workflow', async () => {
    expect(svc.child.exitCode).toBeNull();
    expect((await fetch(`${svc.url}/internal/ping`)).status).toBe(200);
    expect(requests).toBeGreaterThan(300);
    // Visibility is eventually consistent: wait until the listing has caught up with what we saw.
    const deadline = Date.now() + 15_000;
    let ids: string[] = [];
    for (;;) {
      ids = [];
      for await (const wf of client.workflow.list({ query: `TaskQueue = '${svc.taskQueue}'` })) ids.push(wf.workflowId);
      if (ids.length >= rendered.size || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(new Set(ids)).toEqual(rendered);
    process.stdout.write(`fuzz: ${requests} requests, ${rendered.size} valid bodies rendered, ${problems.length} problems\n`);
  }, 30_000);
});
