/**
 * ComfyUI's own API across a crash: a client like ComfyUI's WebSocket example queues a prompt, the whole
 * comfy-durable stack (`start`: front and its worker process) is SIGKILLed while the prompt renders, and
 * started again. The same client's `GET /history/{prompt_id}` then returns the result, and the fake ComfyUI
 * rendered the prompt once (the new attempt re-attached to the running prompt). Temporal keeps running: it is
 * the durable state the restart relies on.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { pngSize } from '../support/fixtures.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { expectRenderedOnce, fakeStats, scenario, waitFor, waitProgress, waitRunning } from './helpers.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENV = { STALL_TIMEOUT_MS: '8000', HEARTBEAT_TIMEOUT_MS: '4000', POLL_INTERVAL_MS: '200' };

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;

beforeAll(async () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-comfyapi-'));
  [temporal, fake] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui'), stepMs: 150, logLevel: 'silent' }),
  ]);
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, dataDir, env: ENV });
}, 300_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await temporal?.stop();
});

describe("ComfyUI's API across a crash of the stack", () => {
  scenario(
    'SIGKILL mid-prompt and restart: the same client reads the result from /history/{prompt_id}, rendered once',
    async () => {
      const graph = JSON.parse(readFileSync(path.join(root, 'test', 'golden', 'imagegen-flux-schnell-txt2img.json'), 'utf8')) as Record<string, any>;
      graph.latent.inputs.width = 64;
      graph.latent.inputs.height = 64;
      graph.sampler.inputs.steps = 40;
      const clientId = 'crash-client';
      const ws = new WebSocket(`${svc.url.replace('http', 'ws')}/ws?clientId=${clientId}`);
      const seen: string[] = [];
      ws.on('message', (d, binary) => {
        if (!binary) seen.push((JSON.parse((d as Buffer).toString('utf8')) as { type: string }).type);
      });
      ws.on('error', () => undefined);
      await new Promise((r) => ws.once('open', r));
      const res = await fetch(`${svc.url}/prompt`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: graph, client_id: clientId }),
      });
      const { prompt_id: promptId } = (await res.json()) as { prompt_id: string };
      expect(res.status).toBe(200);
      const running = await waitRunning(fake.url, 60_000);
      await waitProgress(fake.url, running, 3, 60_000);
      // Events flowed before the crash (the socket then dies with the front).
      await waitFor('execution_start on the socket', () => seen.includes('execution_start'), 30_000, 50);

      await svc.kill('SIGKILL');
      expect((await fakeStats(fake.url)).queue.running).toContain(running);
      await svc.restart();

      const item = await waitFor(
        'the prompt in /history after the restart',
        async () => ((await (await fetch(`${svc.url}/history/${promptId}`)).json()) as Record<string, any>)[promptId],
        120_000,
        250,
      );
      expect(item.status.status_str).toBe('success');
      const image = item.outputs.save.images[0] as { filename: string; subfolder: string; type: string };
      const view = await fetch(`${svc.url}/view?${new URLSearchParams(image).toString()}`);
      expect(view.status).toBe(200);
      expect(pngSize(Buffer.from(await view.arrayBuffer()).toString('base64'))).toMatchObject({ width: 64, height: 64 });
      expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
    },
    240_000,
  );
});
