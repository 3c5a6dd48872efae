/**
 * The durable image pipeline end to end: real Temporal dev server + fake ComfyUI + comfy-durable as a child
 * process, driven over HTTP like an A1111 client.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { discMask, pngSize, redSquare } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { OUTCOME_PATCH } from '../../src/workflows/render.ts';

const run = promisify(execFile);

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

interface A1111Response {
  images: string[];
  parameters: Record<string, unknown>;
  info: string;
}

async function post(route: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(`${svc.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, json, headers: res.headers };
}

async function get(route: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.url}${route}`);
  return { status: res.status, json: await res.json() };
}

async function txt2img(body: Record<string, unknown>): Promise<{ res: A1111Response; info: any; renderId: string }> {
  const r = await post('/sdapi/v1/txt2img', body);
  expect(r.status, JSON.stringify(r.json).slice(0, 500)).toBe(200);
  const res = r.json as A1111Response;
  return { res, info: JSON.parse(res.info), renderId: r.headers.get('x-render-id') ?? '' };
}

async function workflowsStarted(): Promise<number> {
  let n = 0;
  for await (const _ of client.workflow.list({ query: `TaskQueue = '${svc.taskQueue}'` })) n++;
  return n;
}

const b64 = (b: Buffer): string => b.toString('base64');

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { MAX_IMAGE_BYTES: String(2 * 1024 * 1024) } });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

describe('txt2img', () => {
  it.each([
    ['imagegen-flux-dev', 512, 768],
    ['imagegen-flux-schnell', 768, 512],
    ['imagegen-qwen-image', 640, 640],
  ])('%s renders a PNG of the requested size', async (model, width, height) => {
    const { res, info, renderId } = await txt2img({ prompt: 'a lighthouse', model, width, height, seed: 7 });
    expect(res.images).toHaveLength(1);
    const png = pngSize(res.images[0]!);
    expect([png.width, png.height]).toEqual([width, height]);
    expect(info.seed).toBe(7);
    expect(info.all_seeds).toEqual([7]);
    expect(info.width).toBe(width);
    expect(info.height).toBe(height);
    expect(info.render_id).toBe(renderId);
    expect(renderId).toMatch(/^render-/);
    expect(info.infotexts[0]).toContain('Seed: 7');
  });

  it('defaults to 512x512 when the request has no size, and uses the model defaults', async () => {
    const { res, info } = await txt2img({ prompt: 'size-less client', model: 'imagegen-flux-dev' });
    const png = pngSize(res.images[0]!);
    expect([png.width, png.height]).toEqual([512, 512]);
    expect(info.steps).toBe(20);
    expect(info.cfg_scale).toBe(1);
    expect(res.parameters.seed).toBe(-1);
    expect(info.seed).toBeGreaterThanOrEqual(0);
    expect(info.seed).toBeLessThan(4294967295);
  });

  it('same seed gives identical bytes, another seed different bytes', async () => {
    const body = { prompt: 'determinism', model: 'imagegen-flux-schnell', width: 256, height: 256 };
    const a = await txt2img({ ...body, seed: 1234 });
    const b = await txt2img({ ...body, seed: 1234 });
    const c = await txt2img({ ...body, seed: 1235 });
    expect(a.renderId).not.toBe(b.renderId);
    expect(b.res.images[0]).toBe(a.res.images[0]);
    expect(c.res.images[0]).not.toBe(a.res.images[0]);
  });

  it('batch_size 3 returns three images with seeds seed, seed+1, seed+2, each reproducible alone', async () => {
    const { res, info } = await txt2img({ prompt: 'batch', model: 'imagegen-flux-schnell', width: 256, height: 256, seed: 500, batch_size: 3 });
    expect(res.images).toHaveLength(3);
    expect(info.all_seeds).toEqual([500, 501, 502]);
    expect(new Set(res.images).size).toBe(3);
    const alone = await txt2img({ prompt: 'batch', model: 'imagegen-flux-schnell', width: 256, height: 256, seed: 501 });
    expect(alone.res.images[0]).toBe(res.images[1]);
  });

  it('n_iter multiplies the batch (and sd-server batch_count is accepted)', async () => {
    const a = await txt2img({ prompt: 'iter', model: 'imagegen-flux-schnell', width: 128, height: 128, seed: 10, batch_size: 2, n_iter: 2 });
    expect(a.res.images).toHaveLength(4);
    expect(a.info.all_seeds).toEqual([10, 11, 12, 13]);
    const b = await txt2img({ prompt: 'iter', model: 'imagegen-flux-schnell', width: 128, height: 128, seed: 10, batch_count: 2 });
    expect(b.res.images).toHaveLength(2);
  });

  it('snaps multiples of 8 to the model grid and reports the actual size', async () => {
    const { res, info } = await txt2img({ prompt: 'grid', model: 'imagegen-flux-schnell', width: 520, height: 264, seed: 3 });
    const png = pngSize(res.images[0]!);
    expect(png.width % 16).toBe(0);
    expect(png.height % 16).toBe(0);
    expect([info.width, info.height]).toEqual([png.width, png.height]);
  });

  it('the model set through POST /sdapi/v1/options is the default', async () => {
    const models = await get('/sdapi/v1/sd-models');
    const qwen = (models.json as { title: string; model_name: string }[]).find((m) => m.model_name === 'imagegen-qwen-image');
    expect(qwen).toBeDefined();
    expect((await post('/sdapi/v1/options', { sd_model_checkpoint: qwen!.title })).json).toBeNull();
    expect((await get('/sdapi/v1/options')).json.sd_model_checkpoint).toBe(qwen!.title);
    const { info } = await txt2img({ prompt: 'default model', width: 128, height: 128 });
    expect(info.sd_model_name).toBe('imagegen-qwen-image');
    expect(info.cfg_scale).toBe(2.5);
    await post('/sdapi/v1/options', { sd_model_checkpoint: 'imagegen-flux-dev' });
  });
});

describe('img2img and edits', () => {
  it('img2img with an init image renders at the requested size', async () => {
    const r = await post('/sdapi/v1/img2img', {
      prompt: 'repaint',
      model: 'imagegen-flux-dev',
      init_images: [b64(redSquare(64))],
      denoising_strength: 0.5,
      width: 256,
      height: 256,
      seed: 9,
    });
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    expect(r.json.images).toHaveLength(1);
    const info = JSON.parse(r.json.info);
    expect(info.denoising_strength).toBe(0.5);
  });

  it('inpaint with a mask (data URL input) renders', async () => {
    const r = await post('/sdapi/v1/img2img', {
      prompt: 'inpaint',
      model: 'imagegen-flux-dev',
      init_images: [`data:image/png;base64,${b64(redSquare(64))}`],
      mask: b64(discMask(64)),
      seed: 2,
      width: 128,
      height: 128,
    });
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    expect(r.json.images).toHaveLength(1);
  });

  it.each(['imagegen-qwen-image-edit', 'imagegen-flux-kontext'])('%s with extra_images renders', async (model) => {
    const r = await post('/sdapi/v1/txt2img', {
      prompt: 'make it blue',
      model,
      extra_images: [b64(redSquare(64)), b64(discMask(32))],
      seed: 4,
      width: 256,
      height: 256,
    });
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(200);
    expect(r.json.images).toHaveLength(1);
  });

  it('Qwen-Image-Edit with a mask is a 400 naming mask (instruction edits take none), and starts nothing', async () => {
    const before = await workflowsStarted();
    const png = b64(redSquare(16));
    const r = await post('/sdapi/v1/img2img', { prompt: 'edit', model: 'imagegen-qwen-image-edit', init_images: [png], mask: png });
    expect(r.status).toBe(400);
    expect(r.json.field).toBe('mask');
    expect(await workflowsStarted()).toBe(before);
  });
});

describe('bad input is a clear 4xx naming the field, and starts no workflow', () => {
  const png = b64(redSquare(16));
  const cases: [string, string, unknown, number, string][] = [
    ['malformed JSON', '/sdapi/v1/txt2img', '{"prompt": ', 400, 'body'],
    ['wrong type', '/sdapi/v1/txt2img', { prompt: 'x', steps: 'many' }, 422, 'steps'],
    ['invalid base64', '/sdapi/v1/img2img', { prompt: 'x', init_images: ['%%%not-base64%%%'] }, 400, 'init_images.0'],
    ['non-image bytes', '/sdapi/v1/img2img', { prompt: 'x', init_images: [Buffer.from('hello, not an image').toString('base64')] }, 400, 'init_images.0'],
    [
      'image over the size limit',
      '/sdapi/v1/img2img',
      { prompt: 'x', init_images: [b64(Buffer.concat([redSquare(16), Buffer.alloc(3 * 1024 * 1024)]))] },
      413,
      'init_images.0',
    ],
    ['unknown model', '/sdapi/v1/txt2img', { prompt: 'x', model: 'sdxl-nope' }, 400, 'model'],
    ['unknown sampler', '/sdapi/v1/txt2img', { prompt: 'x', sampler_name: 'Warp Drive' }, 400, 'sampler_name'],
    [
      'extra_images on a model that cannot use them',
      '/sdapi/v1/txt2img',
      { prompt: 'x', model: 'imagegen-flux-dev', extra_images: [png] },
      400,
      'extra_images',
    ],
    // Sizes over the budget are fitted (a1111-clients.test.ts); only sizes no image can have are refused.
    ['size out of range', '/sdapi/v1/txt2img', { prompt: 'x', width: 0 }, 400, 'width'],
    ['negative size', '/sdapi/v1/txt2img', { prompt: 'x', height: -64 }, 400, 'height'],
    ['batch over the limit', '/sdapi/v1/txt2img', { prompt: 'x', batch_size: 50 }, 400, 'batch_size'],
    ['img2img without init_images', '/sdapi/v1/img2img', { prompt: 'x' }, 404, 'init_images'],
    ['prompt over the length limit', '/sdapi/v1/txt2img', { prompt: 'x'.repeat(20_000) }, 422, 'prompt'],
    ['URL images are not fetched', '/sdapi/v1/img2img', { prompt: 'x', init_images: ['http://127.0.0.1:1/x.png'] }, 400, 'init_images.0'],
  ];

  it.each(cases)('%s', async (_name, route, body, status, field) => {
    const before = await workflowsStarted();
    const r = await post(route, body);
    expect(r.status, JSON.stringify(r.json).slice(0, 300)).toBe(status);
    expect(r.json.field).toBe(field);
    expect(typeof r.json.detail).toBe('string');
    expect(r.json.detail.length).toBeGreaterThan(0);
    expect(await workflowsStarted()).toBe(before);
  });

  it('unknown model error lists the known ones; unknown sampler lists valid ones', async () => {
    const m = await post('/sdapi/v1/txt2img', { prompt: 'x', model: 'sdxl-nope' });
    expect(m.json.detail).toContain('imagegen-flux-dev');
    const s = await post('/sdapi/v1/txt2img', { prompt: 'x', sampler_name: 'Warp Drive' });
    expect(s.json.detail).toContain('Euler');
  });
});

describe('discovery routes clients call around renders', () => {
  it('answers A1111 shapes', async () => {
    const models = await get('/sdapi/v1/sd-models');
    expect(models.json.map((m: { model_name: string }) => m.model_name)).toEqual(
      expect.arrayContaining(['imagegen-flux-dev', 'imagegen-flux-schnell', 'imagegen-flux-kontext', 'imagegen-qwen-image', 'imagegen-qwen-image-edit']),
    );
    const samplers = await get('/sdapi/v1/samplers');
    expect(samplers.json.some((s: { name: string }) => s.name === 'Euler a')).toBe(true);
    const schedulers = await get('/sdapi/v1/schedulers');
    expect(schedulers.json.some((s: { name: string }) => s.name === 'karras')).toBe(true);
    expect((await get('/sdapi/v1/upscalers')).status).toBe(200);
    expect((await get('/sdapi/v1/scripts')).json).toEqual({ txt2img: [], img2img: ['sd upscale'] });
    const progress = await get('/sdapi/v1/progress');
    expect(progress.json.progress).toBe(0);
    expect(progress.json.state.job_count).toBe(0);
    expect((await post('/sdapi/v1/interrupt', {})).json).toEqual({});
    expect((await get('/internal/ping')).json).toEqual({});
    const health = await get('/health');
    expect(health.status).toBe(200);
  });
});

describe('browser attacks on the loopback front', () => {
  const raw = (method: string, route: string, headers: Record<string, string>, body?: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = http.request(`${svc.url}${route}`, { method, headers }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(body);
    });

  it('a DNS-rebinding page (foreign Host) is refused; loopback names are served', async () => {
    expect(await raw('GET', '/sdapi/v1/options', { host: 'evil.example:7860' })).toBe(403);
    expect(await raw('GET', '/sdapi/v1/options', { host: `localhost:${svc.port}` })).toBe(200);
  });

  it('a cross-site POST (text/plain, foreign Origin) starts nothing', async () => {
    const before = await workflowsStarted();
    const status = await raw('POST', '/sdapi/v1/txt2img', { 'content-type': 'text/plain', origin: 'https://evil.example' }, JSON.stringify({ prompt: 'csrf' }));
    expect(status).toBe(403);
    expect(await workflowsStarted()).toBe(before);
  });
});

describe('operators', () => {
  it('the workflow and its graph are visible with `temporal workflow show`', async () => {
    const { renderId } = await txt2img({ prompt: 'inspect me', model: 'imagegen-flux-dev', width: 128, height: 128, seed: 77 });
    const { stdout } = await run(temporal.binary, ['workflow', 'show', '--address', temporal.address, '-w', renderId, '--output', 'json'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).toContain('runPrompt');
    // The front built the graph and handed it over in the workflow input (no local activity: the only marker is
    // the outcome patch's, render.ts OUTCOME_PATCH), and one GPU attempt on the shared GPU queue uploads,
    // renders and stores the outputs.
    expect(stdout).toMatch(/renders-[a-z0-9]+-gpu/);
    const history = JSON.parse(stdout) as { events: { eventType: string; markerRecordedEventAttributes?: { markerName?: string; details?: unknown } }[] };
    const markers = history.events.filter((e) => /MARKER_RECORDED/.test(e.eventType)).map((e) => e.markerRecordedEventAttributes);
    expect(markers.map((m) => m?.markerName)).toEqual(['core_patch']);
    expect(JSON.stringify(markers[0]?.details)).toContain(Buffer.from(JSON.stringify(OUTCOME_PATCH)).toString('base64'));
    expect(history.events.at(-1)?.eventType).toMatch(/COMPLETED/);
    // The graph is in history (the workflow input's second argument): base64 payloads decode to the node list.
    const decoded = history.events
      .map((e) => JSON.stringify(e))
      .join('\n')
      .match(/"data":\s*"([A-Za-z0-9+/=]+)"/g)
      ?.map((m) => Buffer.from(m.replace(/^"data":\s*"/, '').replace(/"$/, ''), 'base64').toString('utf8'))
      .join('\n');
    expect(decoded).toContain('"plan"');
    expect(decoded).toContain('KSampler');
    expect(decoded).toContain('UnetLoaderGGUF');
    // Images never travel through history: the whole history stays small.
    expect(stdout.length).toBeLessThan(200_000);
  });

  it('ComfyUI ran each prompt exactly once', async () => {
    const stats = await fetch(`${fake.url}/__fake/stats`).then((r) => r.json() as Promise<{ executions: Record<string, number> }>);
    const counts = Object.values(stats.executions);
    expect(counts.length).toBeGreaterThan(0);
    expect(counts.every((c) => c === 1)).toBe(true);
  });
});
