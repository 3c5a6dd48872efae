/**
 * The OpenAI image API through the real stack (Temporal dev server + fake ComfyUI + comfy-durable as a child
 * process, with API_TOKEN): the seed is honoured (same seed → identical bytes) and reported, `url` answers
 * serve the same bytes, edits and inpaints render. Then the real `openai` Python SDK (PyPI) drives it
 * (test/clients/openai_driver.py); that part needs the SDK in `.venv-openai/` (`.ci/run` creates it) and is
 * skipped, saying why, without it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { makePng, pngSize, redSquare } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = process.env.OPENAI_PYTHON ?? path.join(root, '.venv-openai', 'bin', 'python');
const driver = path.join(root, 'test', 'clients', 'openai_driver.py');
const sdkAvailable = existsSync(python);
if (!sdkAvailable) console.warn(`OpenAI SDK test skipped: no Python with openai at ${python} (run .ci/run, or set OPENAI_PYTHON)`);

const TOKEN = 'openai-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { API_TOKEN: TOKEN } });
}, 180_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

async function generate(body: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${svc.url}/v1/images/generations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  expect(res.status, JSON.stringify(json).slice(0, 500)).toBe(200);
  return json;
}

describe('OpenAI image API (real stack)', () => {
  it('honours and reports the seed: the same seed renders identical bytes, image i of n renders with seed + i', async () => {
    const body = { model: 'imagegen-flux-schnell', prompt: 'a lighthouse at dusk', size: '256x256', seed: 42, steps: 2 };
    const a = await generate(body);
    const b = await generate(body);
    expect(a.data[0].seed).toBe(42);
    expect(b.data[0].seed).toBe(42);
    expect(a.data[0].b64_json).toBe(b.data[0].b64_json);
    expect(pngSize(a.data[0].b64_json)).toMatchObject({ width: 256, height: 256 });
    expect(a.render_id).not.toBe(b.render_id);

    const batch = await generate({ ...body, n: 2, seed: 41 });
    expect(batch.data.map((d: { seed: number }) => d.seed)).toEqual([41, 42]);
    // The second image of a batch seeded 41 is the image seeded 42.
    expect(batch.data[1].b64_json).toBe(a.data[0].b64_json);
    expect(batch.data[0].b64_json).not.toBe(a.data[0].b64_json);

    // url: the service serves the same bytes (behind the token, like every other route).
    const linked = await generate({ ...body, response_format: 'url' });
    expect(linked.data[0].url).toBe(`${svc.url}/renders/${linked.render_id}/outputs/0`);
    const img = await fetch(linked.data[0].url, { headers: auth });
    expect(img.status).toBe(200);
    expect(Buffer.from(await img.arrayBuffer()).toString('base64')).toBe(a.data[0].b64_json);
  }, 180_000);

  it('edits: references on Kontext, an inpaint with an OpenAI mask on Flux schnell', async () => {
    const form = new FormData();
    form.append('model', 'imagegen-flux-kontext');
    form.append('prompt', 'make it blue');
    form.append('seed', '3');
    form.append('steps', '2');
    form.append('image[]', new Blob([makePng(96, 64, () => [200, 0, 0, 255])], { type: 'image/png' }), 'a.png');
    form.append('image[]', new Blob([redSquare(32)], { type: 'image/png' }), 'b.png');
    const res = await fetch(`${svc.url}/v1/images/edits`, { method: 'POST', headers: auth, body: form });
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json).slice(0, 500)).toBe(200);
    expect(json.data[0].seed).toBe(3);
    expect(pngSize(json.data[0].b64_json)).toMatchObject({ width: 96, height: 64 });

    const inpaint = new FormData();
    inpaint.append('model', 'imagegen-flux-schnell');
    inpaint.append('prompt', 'a blue ball');
    inpaint.append('steps', '2');
    inpaint.append('image', new Blob([redSquare(64)], { type: 'image/png' }), 'a.png');
    inpaint.append(
      'mask',
      new Blob([makePng(64, 64, (x, y) => ((x - 32) ** 2 + (y - 32) ** 2 < 256 ? [0, 0, 0, 0] : [0, 0, 0, 255]))], { type: 'image/png' }),
      'm.png',
    );
    const r2 = await fetch(`${svc.url}/v1/images/edits`, { method: 'POST', headers: auth, body: inpaint });
    const j2 = (await r2.json()) as any;
    expect(r2.status, JSON.stringify(j2).slice(0, 500)).toBe(200);
    expect(pngSize(j2.data[0].b64_json)).toMatchObject({ width: 64, height: 64 });
    const timeline = (await (await fetch(`${svc.url}/renders/${j2.render_id}`, { headers: auth })).json()) as any;
    expect(timeline.request).toMatchObject({ kind: 'img2img', denoise: 1 });
    expect(timeline.request.mask).toBeDefined();
  }, 180_000);
});

/** Runs the driver and collects its JSON lines by step. */
function runDriver(imagePath: string, maskPath: string): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [driver, svc.url, TOKEN, imagePath, maskPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    const steps: Record<string, any> = {};
    let out = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => {
      for (const line of out.split('\n')) if (line.startsWith('{')) steps[JSON.parse(line).step] = JSON.parse(line);
      if (code === 0) resolve(steps);
      else reject(new Error(`openai driver exited ${code}:\n${stderr}`));
    });
  });
}

describe.skipIf(!sdkAvailable)('the real OpenAI Python SDK', () => {
  it('lists models, generates with the seed honoured, edits on Kontext, and reads errors', async () => {
    const image = path.join(mkdtempSync(path.join(os.tmpdir(), 'cd-openai-')), 'in.png');
    writeFileSync(
      image,
      makePng(96, 64, () => [20, 120, 200, 255]),
    );
    const mask = path.join(path.dirname(image), 'mask.png');
    writeFileSync(
      mask,
      makePng(96, 64, (x) => (x < 48 ? [0, 0, 0, 0] : [0, 0, 0, 255])),
    );
    const s = await runDriver(image, mask);
    expect(s.models.ids).toEqual(expect.arrayContaining(['imagegen-flux-schnell', 'imagegen-flux-kontext', 'videogen-wan22-5b']));
    const [first, second] = s.generate.runs;
    expect(first.seeds).toEqual([42]);
    expect(first.images[0].size).toEqual([256, 256]);
    expect(second.images[0].sha256).toBe(first.images[0].sha256);
    expect(first.revised).toEqual([null]);
    expect(s.generate_other_seed.seeds).toEqual([43, 44]);
    expect(s.generate_other_seed.images[0].sha256).not.toBe(first.images[0].sha256);
    expect(s.edit.seeds).toEqual([5]);
    expect(s.edit.images[0].size).toEqual([96, 64]);
    expect(s.edit_two.images[0].size).toEqual([128, 128]);
    expect(s.inpaint.seeds).toEqual([8, 9]);
    expect(s.inpaint.images.map((i: { size: number[] }) => i.size)).toEqual([
      [96, 64],
      [96, 64],
    ]);
    expect(s.bad_model).toMatchObject({ raised: 'BadRequestError', status: 400, param: 'model', type: 'invalid_request_error' });
    expect(s.bad_model.message).toMatch(/unknown model "no-such-model"/);
    expect(s.bad_key).toMatchObject({ raised: 'AuthenticationError', status: 401, code: 'invalid_api_key' });
    expect(s.bad_key.message).toMatch(/missing or invalid API token/);
    expect(s.done).toBeDefined();
  }, 240_000);
});
