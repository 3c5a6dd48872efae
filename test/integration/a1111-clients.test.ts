/**
 * What common A1111 clients send, through the real stack (real Temporal dev server + fake ComfyUI + the
 * service as a child process): any size, edit models from plain img2img / txt2img, interrupt and skip as
 * A1111 does them, lenient bodies, A1111's error envelope.
 */
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { pngSize, redSquare } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

interface Answer {
  status: number;
  json: any;
  headers: http.IncomingHttpHeaders;
}

/** A raw HTTP request, so tests control the content type and the body bytes exactly. */
function raw(method: string, route: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${svc.url}${route}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let json: unknown = text;
        try {
          json = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: res.statusCode ?? 0, json, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = (route: string, body: unknown): Promise<Answer> =>
  raw('POST', route, { 'content-type': 'application/json' }, JSON.stringify(body));

async function render(route: 'txt2img' | 'img2img', body: Record<string, unknown>): Promise<{ images: string[]; info: any }> {
  const r = await post(`/sdapi/v1/${route}`, body);
  expect(r.status, JSON.stringify(r.json).slice(0, 600)).toBe(200);
  return { images: r.json.images, info: JSON.parse(r.json.info) };
}

const sizeOf = (b64: string) => {
  const { width, height } = pngSize(b64);
  return { width, height };
};

/** Runs `then` synchronously the moment the fake records its `n`-th finished prompt (no polling race). */
function onFinishedPrompt(n: number, then: () => void): void {
  const history = fake.state.queue.history;
  const set = history.set.bind(history);
  let seen = 0;
  history.set = (k, v) => {
    const r = set(k, v);
    if (++seen === n) {
      history.set = set;
      then();
    }
    return r;
  };
}

/** Resolves once the fake is running a prompt inside a hanging node. */
async function hanging(): Promise<void> {
  for (;;) {
    const s = fake.state.statsSnapshot();
    if (s.queue.running.length > 0 && s.faults.hang === null) return;
    await new Promise((r) => setImmediate(r));
  }
}

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { DEFAULT_MODEL: 'imagegen-flux-schnell' } });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

describe('sizes', () => {
  it.each([
    [960, 540, 960, 544],
    [540, 960, 544, 960],
    [1366, 768, 1360, 768],
    [500, 500, 496, 496],
  ])('%i×%i renders at the model grid (%i×%i) and says so', async (w, h, ew, eh) => {
    const { images, info } = await render('txt2img', { prompt: 'a size', width: w, height: h, steps: 1 });
    expect(sizeOf(images[0]!)).toEqual({ width: ew, height: eh });
    expect(info).toMatchObject({ width: ew, height: eh });
    expect(info.warnings.join('\n')).toMatch(/snapped/);
  });

  it('a size beyond the pixel budget is a 400 naming the field', async () => {
    const r = await post('/sdapi/v1/txt2img', { prompt: 'big', width: 2048, height: 2048 });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ error: 'HTTPException', field: 'width' });
  });

  it('steps 0 is the model default; a batch of 10 (Open WebUI n=10) renders', async () => {
    const { images, info } = await render('txt2img', { prompt: 'ten', batch_size: 10, steps: 0, width: 64, height: 64 });
    expect(images).toHaveLength(10);
    expect(info.steps).toBe(4);
    expect(info.all_seeds).toHaveLength(10);
  });
});

describe('edit models from standard clients', () => {
  for (const model of ['imagegen-flux-kontext', 'imagegen-qwen-image-edit']) {
    it(`${model}: plain img2img edits from init_images, plain txt2img renders`, async () => {
      const init = redSquare(96).toString('base64');
      const edit = await render('img2img', { model, prompt: 'make it blue', init_images: [`data:image/png;base64,${init}`], width: 96, height: 96, steps: 1 });
      expect(edit.images).toHaveLength(1);
      expect(edit.info.warnings.join('\n')).toMatch(/edit source/);
      const t = await render('txt2img', { model, prompt: 'a cube', width: 64, height: 64, steps: 1 });
      expect(sizeOf(t.images[0]!)).toEqual({ width: 64, height: 64 });
    });
  }
});

describe('interrupt and skip as A1111 does them', () => {
  it('interrupt: the waiting txt2img answers 200 with the images finished before it, and says so', async () => {
    // Item 0 renders; item 1 hangs in its sampler until interrupted.
    onFinishedPrompt(1, () => fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } }));
    const waiting = post('/sdapi/v1/txt2img', { prompt: 'stop me', batch_size: 3, width: 64, height: 64, steps: 1, seed: 7 });
    await hanging();
    // webuiapi / SillyTavern send it with a JSON content type and no body.
    const stop = await raw('POST', '/sdapi/v1/interrupt', { 'content-type': 'application/json' });
    expect(stop.status).toBe(200);
    expect(stop.json).toEqual({});
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
    const info = JSON.parse(r.json.info);
    expect(info).toMatchObject({ interrupted: true, all_seeds: [7] });
    expect(info.infotexts).toHaveLength(1);
  });

  it('skip ends the current image of a batch and goes on with the next', async () => {
    fake.state.faults.apply({ hang: { count: 1, nodeClass: 'KSampler' } });
    const waiting = post('/sdapi/v1/txt2img', { prompt: 'skip one', batch_size: 2, width: 64, height: 64, steps: 1, seed: 20 });
    await hanging();
    const skip = await raw('POST', '/sdapi/v1/skip', { 'content-type': 'application/json' }, '');
    expect(skip.status).toBe(200);
    expect(skip.json).toBeNull();
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
    expect(JSON.parse(r.json.info)).toMatchObject({ skipped: [0], all_seeds: [21] });
  });
});

describe('lenient where A1111 is lenient', () => {
  it('body-less POST routes ignore an empty body whatever its content type', async () => {
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
      for (const route of ['/sdapi/v1/interrupt', '/sdapi/v1/skip', '/sdapi/v1/refresh-checkpoints']) {
        const r = await raw('POST', route, { 'content-type': type }, '');
        expect(r.status, `${route} ${type}`).toBe(200);
      }
    }
  });

  it('a JSON body without a content type is read as JSON', async () => {
    const r = await raw('POST', '/sdapi/v1/txt2img', {}, JSON.stringify({ prompt: 'no type', width: 64, height: 64, steps: 1 }));
    expect(r.status).toBe(200);
    expect(r.json.images).toHaveLength(1);
  });

  it('unknown routes answer FastAPI 404 {"detail":"Not Found"}', async () => {
    const r = await raw('GET', '/sdapi/v1/no-such-route', {});
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ detail: 'Not Found' });
  });
});
