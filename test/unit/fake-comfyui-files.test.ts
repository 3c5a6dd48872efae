/**
 * File routes and discovery routes of the fake ComfyUI: upload collision and containment rules, /view
 * rules, the live LoadImage list, /object_info, /models, /system_stats, and img2img sizes from uploads.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readImageHeader, renderPng } from '../../tools/fake-comfyui/png.ts';
import { startFakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { httpClient, sdGraph } from '../../tools/fake-comfyui/testing.ts';

let fake: FakeComfyUI;
let http: ReturnType<typeof httpClient>;

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0, logLevel: process.env.LOG_LEVEL ?? 'silent' });
  http = httpClient(fake.url);
});

afterAll(async () => {
  await fake.close();
});

const png = (key: string, w = 16, h = 8) => renderPng({ width: w, height: h, contentKey: key });

async function upload(bytes: Buffer, filename: string, fields: Record<string, string> = {}, prefix = '') {
  const form = new FormData();
  form.append('image', new Blob([bytes], { type: 'image/png' }), filename);
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  const res = await fetch(`${fake.url}${prefix}/upload/image`, { method: 'POST', body: form });
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}

describe('POST /upload/image', () => {
  it('identical content keeps the name; different content gets "stem (n).ext"; overwrite replaces', async () => {
    expect(await upload(png('a'), 'pic.png')).toEqual({ status: 200, json: { name: 'pic.png', subfolder: '', type: 'input' } });
    expect((await upload(png('a'), 'pic.png')).json).toEqual({ name: 'pic.png', subfolder: '', type: 'input' });
    expect((await upload(png('b'), 'pic.png')).json).toEqual({ name: 'pic (1).png', subfolder: '', type: 'input' });
    expect((await upload(png('c'), 'pic.png')).json).toEqual({ name: 'pic (2).png', subfolder: '', type: 'input' });
    expect((await upload(png('b'), 'pic.png')).json).toEqual({ name: 'pic (1).png', subfolder: '', type: 'input' });
    expect(
      readdirSync(path.join(fake.dataDir, 'input'))
        .filter((f) => f.startsWith('pic'))
        .sort(),
    ).toEqual(['pic (1).png', 'pic (2).png', 'pic.png']);
    expect((await upload(png('d'), 'pic.png', { overwrite: 'true' }, '/api')).json).toEqual({ name: 'pic.png', subfolder: '', type: 'input' });
    expect(readFileSync(path.join(fake.dataDir, 'input', 'pic.png')).equals(png('d'))).toBe(true);
  });

  it('creates subfolders, honours type, rejects traversal (400), unknown type (500) and a missing file (400)', async () => {
    expect((await upload(png('s'), 'in-sub.png', { subfolder: 'a/b' })).json).toEqual({ name: 'in-sub.png', subfolder: 'a/b', type: 'input' });
    expect(existsSync(path.join(fake.dataDir, 'input', 'a', 'b', 'in-sub.png'))).toBe(true);
    expect((await upload(png('t'), 't.png', { type: 'temp' })).json).toEqual({ name: 't.png', subfolder: '', type: 'temp' });
    expect((await upload(png('x'), 'x.png', { subfolder: '../outside' })).status).toBe(400);
    expect((await upload(png('x'), '../evil.png')).status).toBe(400);
    expect((await upload(png('x'), 'x.png', { subfolder: '/etc' })).status).toBe(400);
    expect((await upload(png('x'), 'x.png', { type: 'models' })).status).toBe(500);
    const form = new FormData();
    form.append('subfolder', 'a');
    expect((await fetch(`${fake.url}/upload/image`, { method: 'POST', body: form })).status).toBe(400);
  });
});

describe('GET /view', () => {
  it('serves files with a guessed content type; 404 / 400 / 403 like ComfyUI', async () => {
    await upload(png('v', 20, 10), 'view.png', { subfolder: 'vs' });
    const ok = await fetch(`${fake.url}/view?filename=view.png&subfolder=vs&type=input`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('image/png');
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    expect(ok.headers.get('content-disposition')).toBe('filename="view.png"');
    expect(Buffer.from(await ok.arrayBuffer()).equals(png('v', 20, 10))).toBe(true);

    const status = async (q: string) => (await fetch(`${fake.url}/api/view${q}`)).status;
    expect(await status('')).toBe(404);
    expect(await status('?filename=view.png&subfolder=vs')).toBe(404);
    expect(await status('?filename=../view.png&type=input')).toBe(400);
    expect(await status('?filename=/etc/passwd')).toBe(400);
    expect(await status('?filename=view.png&type=models')).toBe(400);
    expect(await status('?filename=view.png&type=input&subfolder=../..')).toBe(403);
    expect(await status('?filename=view.png%20[input]&subfolder=vs')).toBe(200);
  });

  it('channel=rgb and channel=a re-encode PNGs', async () => {
    await upload(png('ch', 6, 4), 'ch.png');
    const rgb = PNG.sync.read(Buffer.from(await (await fetch(`${fake.url}/view?filename=ch.png&type=input&channel=rgb`)).arrayBuffer()));
    expect([rgb.width, rgb.height]).toEqual([6, 4]);
    const a = PNG.sync.read(Buffer.from(await (await fetch(`${fake.url}/view?filename=ch.png&type=input&channel=a`)).arrayBuffer()));
    expect([a.data[0], a.data[3]]).toEqual([0, 255]);
  });
});

describe('discovery routes', () => {
  it('/object_info regenerates the LoadImage list from input/ root; /object_info/{class}', async () => {
    await upload(png('list'), 'listed.png');
    const info = (await http.get<Record<string, { input: { required: Record<string, unknown[]> } }>>('/object_info')).json;
    const files = info.LoadImage!.input.required.image![0] as string[];
    expect(files).toContain('listed.png');
    expect(files.some((f) => f.includes('/'))).toBe(false);
    expect(info.LoadImage!.input.required.image![1]).toEqual({ image_upload: true });
    expect(Object.keys((await http.get('/object_info/KSampler')).json as object)).toEqual(['KSampler']);
    expect((await http.get('/api/object_info/NoSuchNode')).json).toEqual({});
  });

  it('/models, /system_stats, /internal/files (not under /api)', async () => {
    expect((await http.get<string[]>('/models')).json).toContain('vae');
    expect((await http.get<string[]>('/models/vae')).json).toContain('ae.safetensors');
    // As on the real server with ComfyUI-GGUF: GGUF files are listed under their own folder.
    expect((await http.get<string[]>('/models/diffusion_models')).json).toContain('wan2.2_ti2v_5B_fp16.safetensors');
    expect((await http.get<string[]>('/models/unet_gguf')).json).toContain('flux1-dev-Q8_0.gguf');
    expect((await http.get('/models/nope')).status).toBe(404);
    const stats = (await http.get<{ system: { comfyui_version: string }; devices: unknown[] }>('/system_stats')).json;
    expect(stats.system.comfyui_version).toBe('0.33.0');
    expect(stats.devices).toHaveLength(1);
    await upload(png('i'), 'internal.png');
    expect((await http.get<string[]>('/internal/files/input')).json).toContain('internal.png [input]');
    expect((await http.get('/internal/files/models')).status).toBe(400);
    expect((await http.get('/api/internal/files/input')).status).toBe(404);
  });

  it('blocks cross-site browser requests like the origin-only middleware', async () => {
    const res = await fetch(`${fake.url}/queue`, { headers: { 'Sec-Fetch-Site': 'cross-site' } });
    expect(res.status).toBe(403);
  });
});

describe('img2img from an upload', () => {
  it('VAEEncode of a LoadImage renders at the uploaded size; ImageScale sets its own size', async () => {
    const up = await upload(png('src', 72, 40), 'src.png', { subfolder: 'refs' });
    const g = sdGraph({ prefix: 'img2img', seed: 60 });
    g['10'] = { class_type: 'LoadImage', inputs: { image: `refs/${up.json!.name as string}` }, _meta: { title: 'Load' } };
    g['11'] = { class_type: 'VAEEncode', inputs: { pixels: ['10', 0], vae: ['4', 2] }, _meta: { title: 'enc' } };
    g['3']!.inputs.latent_image = ['11', 0];
    g['12'] = {
      class_type: 'ImageScale',
      inputs: { image: ['10', 0], upscale_method: 'lanczos', width: 30, height: 0, crop: 'disabled' },
      _meta: { title: 'scale' },
    };
    g['13'] = { class_type: 'SaveImage', inputs: { images: ['12', 0], filename_prefix: 'scaled' }, _meta: { title: 'save scaled' } };
    const { prompt_id } = await http.submit(g);
    const h = await http.waitForHistory<{ outputs: Record<string, { images: Array<{ filename: string; subfolder: string }> }> }>(prompt_id);
    const size = (id: string) => readImageHeader(readFileSync(path.join(fake.dataDir, 'output', h.outputs[id]!.images[0]!.filename)));
    expect(size('9')).toMatchObject({ width: 72, height: 40 });
    expect(size('13')).toMatchObject({ width: 30, height: 17 });
  });
});
