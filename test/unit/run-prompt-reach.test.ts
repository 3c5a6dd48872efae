/**
 * `runPrompt` and a backend that answered recently: it is not asked `/queue` before the prompt (a round trip
 * of every render), and should it have stopped since (a restart between two renders), the attempt waits for
 * it as the probe would have, and renders once. MockActivityEnvironment against an in-process fake ComfyUI
 * that is really closed and started again on the same port.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRunPrompt } from '../../src/activities/run-prompt.ts';
import type { ActivityDeps } from '../../src/activities/deps.ts';
import type { RunPromptInput } from '../../src/contracts/activities.ts';
import type { PromptRun } from '../../src/contracts/render.ts';
import { normalizeRequest } from '../../src/api/a1111/normalize.ts';
import { BackendHealth } from '../../src/backends/health.ts';
import { GpuPool } from '../../src/backends/gpu-pool.ts';
import { FsBlobStore } from '../../src/blobs/fs-store.ts';
import { ComfyClient } from '../../src/comfyui/client.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/log.ts';
import { planRender } from '../../src/models/plan.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { ctx as normalizeCtx } from '../golden/helpers.ts';

let fake: FakeComfyUI;
let dataDir: string;
let client: ComfyClient;
let deps: ActivityDeps;
let pool: GpuPool;
/** Messages the activity logs, for a test to wait on. */
const logged: Array<(msg: string) => void> = [];

beforeAll(async () => {
  fake = await startFakeComfyUI({ port: 0 });
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'run-prompt-reach-'));
  const logger = createLogger('info', 'test', {
    write: (line: string) => {
      const { msg } = JSON.parse(line) as { msg: string };
      for (const l of logged) l(msg);
    },
  });
  const backend = { id: 'gpu0', url: fake.url };
  const health = new BackendHealth(dataDir, logger);
  client = new ComfyClient({ baseUrl: backend.url, logger });
  deps = {
    config: loadConfig({ DATA_DIR: dataDir, POLL_INTERVAL_MS: '50' }),
    blobs: new FsBlobStore(path.join(dataDir, 'blobs')),
    backends: [backend],
    clients: new Map([[backend.id, client]]),
    logger,
    health,
  };
  pool = new GpuPool([backend], health);
});

afterAll(async () => {
  await client.close();
  await fake.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function attemptInput(renderId: string): RunPromptInput {
  const request = normalizeRequest('txt2img', { prompt: 'a lighthouse', seed: 7, width: 64, height: 64, steps: 4 }, normalizeCtx()).request;
  const plan = planRender(request, { renderId });
  return { renderId, item: 0, attempt: 1, graph: plan.items[0]!.graph, stallTimeoutMs: 20_000, model: request.model, request };
}

function run(renderId: string): Promise<PromptRun> {
  const env = new MockActivityEnvironment(
    { workflowExecution: { workflowId: renderId, runId: `run-${renderId}` }, heartbeatTimeoutMs: 60_000 },
    { logger: new DefaultLogger('ERROR') },
  );
  const runPrompt = createRunPrompt(deps, pool);
  return env.run<[RunPromptInput], PromptRun, typeof runPrompt>(runPrompt, attemptInput(renderId));
}

const submissions = () => Object.values(fake.state.statsSnapshot().submissions).reduce((a, b) => a + b, 0);

describe('runPrompt on a backend that answered recently', () => {
  it('is not asked /queue before the prompt (the first render on a silent backend is)', async () => {
    const getQueue = vi.spyOn(client, 'getQueue');
    try {
      await run('render-reach-first');
      expect(getQueue).toHaveBeenCalledTimes(1);
      getQueue.mockClear();
      expect(client.answeredWithin(5_000)).toBe(true);
      const second = await run('render-reach-second');
      expect(second.outputs).toHaveLength(1);
      expect(getQueue).not.toHaveBeenCalled();
    } finally {
      getQueue.mockRestore();
    }
  });

  it('restarted since: the attempt waits for it to answer again and renders the prompt once', async () => {
    await run('render-reach-warm');
    expect(client.answeredWithin(5_000)).toBe(true);
    const port = fake.port;
    const fakeDir = fake.dataDir;
    await fake.close();
    // The fake comes back once the attempt says it waits for it (not on a timer).
    const waiting = new Promise<void>((resolve) => logged.push((msg) => msg.startsWith('ComfyUI stopped answering') && resolve()));
    const attempt = run('render-reach-restarted');
    await Promise.race([waiting, attempt]);
    fake = await startFakeComfyUI({ port, dataDir: fakeDir });
    const result = await attempt;
    expect(result.outputs).toHaveLength(1);
    expect(submissions()).toBe(1);
  });
});
