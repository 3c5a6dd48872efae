/**
 * A model on the sglang engine end to end (real Temporal dev server, fake ComfyUIs, comfy-durable as a child
 * process with MODELS_CONFIG): the same A1111 request renders through SGLDUNETLoader on a ComfyUI with SGLang's
 * plugin, and on one without it fails at once, non-retryably, naming the plugin, with nothing queued there.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { pngSize } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let withPlugin: FakeComfyUI;
let withoutPlugin: FakeComfyUI;
let svcWith: TestService;
let svcWithout: TestService;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cd-sglang-'));
  const config = path.join(dir, 'models.json');
  writeFileSync(config, JSON.stringify({ 'imagegen-flux-dev': { engine: 'sglang', sglang: { options: { enable_torch_compile: true } } } }));
  temporal = await startTestTemporal();
  [withPlugin, withoutPlugin] = await Promise.all([startFakeComfyUI({ port: 0, sgldPlugin: true }), startFakeComfyUI({ port: 0, sgldPlugin: false })]);
  [svcWith, svcWithout] = await Promise.all([
    startService({ temporalAddress: temporal.address, comfyUrl: withPlugin.url, env: { MODELS_CONFIG: config } }),
    startService({ temporalAddress: temporal.address, comfyUrl: withoutPlugin.url, env: { MODELS_CONFIG: config } }),
  ]);
}, 240_000);

afterAll(async () => {
  await Promise.all([svcWith?.kill('SIGKILL'), svcWithout?.kill('SIGKILL')]);
  await Promise.all([withPlugin?.close(), withoutPlugin?.close()]);
  await temporal?.stop();
});

async function txt2img(svc: TestService): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'a lighthouse', model: 'imagegen-flux-dev', width: 512, height: 384, seed: 5 }),
  });
  return { status: res.status, json: await res.json() };
}

const history = async (
  fake: FakeComfyUI,
): Promise<Record<string, { prompt: [number, string, Record<string, { class_type: string; inputs: Record<string, unknown> }>] }>> =>
  (await (await fetch(`${fake.url}/history`)).json()) as never;

describe('sglang engine, end to end', () => {
  it("renders through SGLDUNETLoader with the model's SGLDOptions on a ComfyUI with the plugin", async () => {
    const r = await txt2img(svcWith);
    expect(r.status, JSON.stringify(r.json).slice(0, 400)).toBe(200);
    expect(pngSize(r.json.images[0])).toMatchObject({ width: 512, height: 384 });
    const graphs = Object.values(await history(withPlugin)).map((h) => h.prompt[2]);
    expect(graphs).toHaveLength(1);
    expect(graphs[0]!.unet).toMatchObject({ class_type: 'SGLDUNETLoader', inputs: { unet_name: 'flux1-dev.safetensors', weight_dtype: 'default' } });
    expect(graphs[0]!.sgld_options).toMatchObject({ class_type: 'SGLDOptions', inputs: { model_type: 'flux', enable_torch_compile: true } });
  });

  it('fails fast without the plugin: non-retryable, naming the plugin and the likely cause, nothing queued', async () => {
    const r = await txt2img(svcWithout);
    expect(r.status).toBe(422);
    const text = JSON.stringify(r.json);
    expect(text).toContain('ComfyUI_SGLDiffusion');
    expect(text).toContain('IMPORT FAILED');
    expect(await history(withoutPlugin)).toEqual({});
  });
});
