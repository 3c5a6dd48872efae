/**
 * The real `webuiapi` Python client (PyPI `webuiapi==0.9.17`) against the real stack, with and without Basic
 * auth (webuiapi's `username`/`password`). The driver (test/clients/webuiapi_driver.py) prints what it saw; this
 * test checks it. Needs the client in `.venv-webuiapi/` (`.ci/run` creates it); without it the test is
 * skipped and says why.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = process.env.WEBUIAPI_PYTHON ?? path.join(root, '.venv-webuiapi', 'bin', 'python');
const driver = path.join(root, 'test', 'clients', 'webuiapi_driver.py');
const available = existsSync(python);
if (!available) console.warn(`webuiapi test skipped: no Python with webuiapi at ${python} (run .ci/run, or set WEBUIAPI_PYTHON)`);

let temporal: TestTemporal;
let fake: FakeComfyUI;

beforeAll(async () => {
  if (!available) return;
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
}, 180_000);

afterAll(async () => {
  await fake?.close();
  await temporal?.stop();
});

/** Runs the driver; answers its interrupt phase by making the sampler slow, so the interrupt lands mid-sampling. */
function runDriver(port: number, password?: string): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [driver, String(port), ...(password ? [password] : [])], { stdio: ['pipe', 'pipe', 'pipe'] });
    const steps: Record<string, any> = {};
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const fact = JSON.parse(line) as { step: string };
      steps[fact.step] = fact;
      if (fact.step === 'interrupt_phase') {
        fake.state.faults.apply({ slow: { stepMs: 300 } });
        child.stdin.write('go\n');
      }
    });
    child.on('exit', (code) => (code === 0 ? resolve(steps) : reject(new Error(`webuiapi driver exited ${code}:\n${stderr}`))));
  });
}

describe.skipIf(!available)('webuiapi (real client)', () => {
  for (const password of [undefined, 'webuiapi-secret']) {
    it(
      password ? 'with Basic auth' : 'without auth',
      async () => {
        const svc: TestService = await startService({
          temporalAddress: temporal.address,
          comfyUrl: fake.url,
          ...(password ? { env: { API_TOKEN: password } } : {}),
        });
        try {
          const s = await runDriver(svc.port, password);
          expect(s.discovery.models).toContain('FLUX.1-schnell');
          expect(s.discovery.upscalers).toEqual(expect.arrayContaining(['None', 'Lanczos']));
          expect(s.discovery.latent).toContain('Latent');
          expect(s.discovery.memory).toEqual(['cuda', 'ram']);
          expect(s.model.current).toBe('FLUX.1-schnell');
          expect(s.txt2img).toMatchObject({ size: [960, 544], seed: 11, parameters_steps: 2 });
          expect(s.txt2img.warnings.join('\n')).toMatch(/height: 540 snapped to 544/);
          expect(s.hires.size).toEqual([256, 256]);
          expect(s.png_info.info).toMatch(/^a lighthouse\nSteps: 2/);
          expect(s.extras.size).toEqual([1920, 1088]);
          expect(s.kontext_img2img.size).toEqual([96, 64]);
          expect(s.kontext_img2img.warnings.join('\n')).toMatch(/edit source/);
          expect(s.controlnet_lists.models).toContain('flux1-dev-controlnet-union-pro');
          expect(s.controlnet_lists.modules).toEqual(expect.arrayContaining(['none', 'canny', 'invert']));
          expect(s.controlnet_txt2img).toMatchObject({ size: [64, 64], images: 1 });
          expect(s.controlnet_detect).toMatchObject({ images: 1, size: [64, 64] });
          // Both units reached ComfyUI: two ControlNet applications, one fed by Canny with webuiapi's thresholds.
          const graphs = Object.values((await (await fetch(`${fake.url}/history`)).json()) as Record<string, { prompt: unknown[] }>).map((h) =>
            Object.values(h.prompt[2] as Record<string, { class_type: string; inputs: Record<string, unknown> }>),
          );
          const cnGraph = graphs.find((nodes) => nodes.filter((n) => n.class_type === 'ControlNetApplyAdvanced').length === 2);
          expect(cnGraph, 'a prompt with both units').toBeDefined();
          expect(cnGraph!.find((n) => n.class_type === 'Canny')!.inputs).toMatchObject({ low_threshold: 0.39, high_threshold: 0.78 });
          expect(s.idle_actions).toMatchObject({ interrupt: {}, skip: null });
          expect(s.interrupted).toMatchObject({ images: 1, size: [64, 64], interrupted: true, partial: [0] });
          expect(s.done).toBeDefined();
        } finally {
          await svc.kill('SIGKILL');
          fake.state.faults.apply({ slow: null });
        }
      },
      240_000,
    );
  }
});
