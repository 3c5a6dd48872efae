/**
 * Several ComfyUIs behind one service: renders spread over them (the load is the Temporal backlog of each
 * backend's single-slot queue, not ComfyUI's own queue, which stays at depth one), and a worker serves only
 * the backends GPU_BACKENDS names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../src/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fakes: FakeComfyUI[] = [];
let svc: TestService;

const executions = async (f: FakeComfyUI): Promise<number> => {
  const stats = (await fetch(`${f.url}/__fake/stats`).then((r) => r.json())) as { executions: Record<string, number> };
  return Object.values(stats.executions).reduce((a, b) => a + b, 0);
};

beforeAll(async () => {
  temporal = await startTestTemporal();
  fakes = await Promise.all([startFakeComfyUI({ port: 0, renderMs: 400 }), startFakeComfyUI({ port: 0, renderMs: 400 })]);
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fakes.map((f) => f.url).join(',') });
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await Promise.all(fakes.map((f) => f.close()));
  await temporal?.stop();
});

describe('several backends', () => {
  it('concurrent renders are spread over the ComfyUIs, each rendered once', async () => {
    const render = (seed: number) =>
      fetch(`${svc.url}/sdapi/v1/txt2img`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'spread', model: 'imagegen-flux-schnell', width: 64, height: 64, seed }),
      }).then((r) => r.status);
    const statuses = await Promise.all([1, 2, 3, 4, 5, 6].map(render));
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    const [a, b] = await Promise.all(fakes.map(executions));
    expect(a! + b!).toBe(6);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
  });

  it('a worker limited by GPU_BACKENDS to an unknown id refuses to start, naming the variable', async () => {
    await expect(
      startService({ mode: 'worker', temporalAddress: temporal.address, comfyUrl: fakes[0]!.url, env: { GPU_BACKENDS: 'comfyui-7' } }),
    ).rejects.toThrow(/GPU_BACKENDS names unknown backends comfyui-7/);
  });
});
