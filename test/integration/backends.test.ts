/**
 * Several ComfyUIs behind one service: prompts are bound late (one shared GPU queue, one slot per ComfyUI),
 * so concurrent renders keep every backend busy and no ComfyUI ever holds more than one prompt; a worker
 * serves only the backends GPU_BACKENDS names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
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
    // Work-conserving: a free backend takes the next waiting prompt, so with 6 equal renders both keep
    // working (the old up-front guess once sent all six to one backend); 3/3 on a quiet machine, and even a
    // backend slowed by a CPU hog gets its share.
    expect(a).toBeGreaterThanOrEqual(2);
    expect(b).toBeGreaterThanOrEqual(2);
  });

  it('a worker limited by GPU_BACKENDS to an unknown id refuses to start, naming the variable', async () => {
    await expect(
      startService({ mode: 'worker', temporalAddress: temporal.address, comfyUrl: fakes[0]!.url, env: { GPU_BACKENDS: 'comfyui-7' } }),
    ).rejects.toThrow(/GPU_BACKENDS names unknown backends comfyui-7/);
  });
});
