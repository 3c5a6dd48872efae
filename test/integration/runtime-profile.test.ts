/**
 * A model added at run time renders through the whole stack: a synthetic Flux-family profile (a unet file
 * no recorded fixture lists) is registered in this process, then the service (runServices in `start` mode,
 * its workers here too, on a real Temporal dev server) and the fake ComfyUI run here too. Nothing else is told about the
 * model: the A1111 routes list and resolve it, the submitter builds its graph with the Flux builder, and
 * the fake accepts its file because it lists every registered profile's files.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServices, type Running } from '../../src/app/services.ts';
import { loadConfig } from '../../src/config/config.ts';
import { OBJECT_INFO_FIXTURE_URL } from '../../tools/fake-comfyui/fixture.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { createLogger } from '../../src/log.ts';
import type { ModelProfile } from '../../src/models/profile.ts';
import { getProfile, registerProfile, unregisterProfile } from '../../src/models/registry.ts';
import { pngSize } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const UNET = 'synthetic-flux-test-Q4_K_S.gguf';
const dev = getProfile('imagegen-flux-dev')!;
const synthetic: ModelProfile = {
  ...dev,
  id: 'imagegen-test-synthetic-flux',
  title: 'Synthetic Flux (test)',
  aliases: ['synthetic-flux'],
  defaults: { ...dev.defaults, steps: 3, guidance: 2.75 },
  files: { ...dev.files, unet: UNET },
};

let temporal: TestTemporal;
let fake: FakeComfyUI;
let running: Running;
let url: string;

beforeAll(async () => {
  registerProfile(synthetic);
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0 });
  const port = await freePort();
  const config = loadConfig({
    TEMPORAL_ADDRESS: temporal.address,
    COMFYUI_URL: fake.url,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'cd-runtime-profile-')),
    HOST: '127.0.0.1',
    PORT: String(port),
    TEMPORAL_TASK_QUEUE: `renders-${Math.random().toString(36).slice(2, 10)}`,
  });
  // Workers in this process: the profile registered here must be known to them too.
  running = await runServices('start', config, createLogger('warn', 'runtime-profile-test'), { workersInProcess: true });
  url = `http://127.0.0.1:${port}`;
}, 180_000);

afterAll(async () => {
  await running?.stop();
  await fake?.close();
  await temporal?.stop();
  unregisterProfile(synthetic.id);
});

describe('a Flux-family profile registered at run time', () => {
  it('the recorded fixture does not list its unet; the fake serves it in UnetLoaderGGUF', async () => {
    expect(readFileSync(OBJECT_INFO_FIXTURE_URL, 'utf8')).not.toContain(UNET);
    const info = (await (await fetch(`${fake.url}/object_info/UnetLoaderGGUF`)).json()) as {
      UnetLoaderGGUF: { input: { required: { unet_name: [string[]] } } };
    };
    expect(info.UnetLoaderGGUF.input.required.unet_name[0]).toContain(UNET);
    expect(info.UnetLoaderGGUF.input.required.unet_name[0]).toContain(dev.files.unet);
  });

  it('is listed by /sdapi/v1/sd-models and renders txt2img by its alias through Temporal and the fake', async () => {
    const models = (await (await fetch(`${url}/sdapi/v1/sd-models`)).json()) as { model_name: string; title: string }[];
    expect(models.map((m) => m.model_name)).toContain(synthetic.id);

    const res = await fetch(`${url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a synthetic lighthouse', model: 'synthetic-flux', width: 256, height: 192, seed: 7 }),
    });
    const body = (await res.json()) as { images: string[]; info: string };
    expect(res.status, JSON.stringify(body).slice(0, 400)).toBe(200);
    expect(body.images).toHaveLength(1);
    expect(pngSize(body.images[0]!)).toMatchObject({ width: 256, height: 192 });
    const info = JSON.parse(body.info) as { sd_model_name?: string; steps?: number; infotexts: string[] };
    expect(info.steps).toBe(3);
    expect(info.infotexts[0]).toContain(synthetic.id);

    // The graph the fake ran is the Flux builder's, with this profile's unet and defaults.
    const history = (await (await fetch(`${fake.url}/history`)).json()) as Record<
      string,
      { prompt: [number, string, Record<string, { class_type: string; inputs: Record<string, unknown> }>] }
    >;
    const graphs = Object.values(history).map((h) => h.prompt[2]);
    const ours = graphs.find((g) => g.unet?.inputs.unet_name === UNET);
    expect(ours, 'a prompt with the synthetic unet').toBeDefined();
    expect(ours!.unet!.class_type).toBe('UnetLoaderGGUF');
    expect(Object.values(ours!).find((n) => n.class_type === 'FluxGuidance')?.inputs.guidance).toBe(2.75);
  });
});
