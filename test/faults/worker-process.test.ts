/**
 * Fault suite, `start` mode's two processes: the front and its worker process (app/worker-process.ts).
 * - The front's event loop frozen outright (SIGSTOP) for longer than the heartbeat timeout: the worker's
 *   heartbeats go on, the render completes in Temporal while the front is still frozen, with one attempt.
 * - The worker process SIGKILLed mid-render: the front starts it again, the next attempt re-attaches, the
 *   client waiting on the front gets its images, rendered once; /metrics merges the new worker's counters.
 * - A worker process that keeps dying is started again with a doubling back-off; the front serves meanwhile.
 * - SIGTERM: the waiting client gets its images, the worker process drains and exits, then the front (exit 0).
 * - The front SIGKILLed: its worker process notices and exits (no orphan).
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, metricValue, resetFake, scenario, setFaults, waitFor, waitProgress, waitRunning } from './helpers.ts';
import { expectReattachedOnce, runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

const HEARTBEAT_TIMEOUT_MS = 3_000;
// At info: the worker process's own log lines, relayed by the front, are part of what is checked.
const ENV = {
  STALL_TIMEOUT_MS: '8000',
  HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
  POLL_INTERVAL_MS: '200',
  SHUTDOWN_GRACE_MS: '1000',
  LOG_LEVEL: 'info',
};
/** 60 steps of 200 ms: a 12 s render, several heartbeat timeouts long. */
const LONG = { ...SCHNELL, steps: 60 };

beforeAll(async () => {
  [temporal, fake] = await Promise.all([startTestTemporal(), startFakeComfyUI({ port: 0, stepMs: 50, logLevel: 'silent' })]);
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: ENV });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
}, 240_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

beforeEach(async () => {
  if (svc.child.exitCode !== null || svc.child.signalCode !== null) await svc.restart();
  await resetFake(fake.url);
  await setFaults(fake.url, { slow: { stepMs: 200 } });
}, 240_000);

/** The worker process as /health reports it: running, starting or restarting. */
async function workerState(): Promise<string> {
  const health = (await (await fetch(`${svc.url}/health`)).json()) as { checks: Array<{ name: string; detail?: string }> };
  return health.checks.find((c) => c.name === 'worker-process')?.detail ?? '';
}

/** The worker process's pid once it is up (`running (pid N)`). */
async function workerPid(): Promise<number | undefined> {
  const m = /^running \(pid (\d+)\)$/.exec(await workerState());
  return m ? Number(m[1]) : undefined;
}

/** A process's state letter from /proc (R, S, T stopped, Z zombie), or undefined when it is gone. */
function procState(pid: number): string | undefined {
  try {
    return /\) (\S) /.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

const gone = (pid: number): boolean => {
  const state = procState(pid);
  return state === undefined || state === 'Z';
};

function exitOf(s: TestService, timeoutMs: number): Promise<number | null> {
  const child = s.child;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the front did not exit within ${timeoutMs} ms`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describe('start mode: the worker in its own process', () => {
  scenario(
    "the front's event loop frozen past the heartbeat timeout: the render completes meanwhile, one attempt",
    async () => {
      const key = `frozen-front-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...LONG, prompt: 'freeze the front', seed: 31 }, { key });
      const promptId = await waitRunning(fake.url);
      const frontPid = svc.child.pid!;
      const frozenAt = Date.now();
      process.kill(frontPid, 'SIGSTOP');
      let frozenFor: number | undefined;
      try {
        await waitFor(
          'the render to complete in Temporal',
          async () => (await client.workflow.getHandle(renderIdForKey(key)).describe()).status.name === 'COMPLETED',
          60_000,
          200,
        );
        frozenFor = Date.now() - frozenAt;
        // Still frozen: nothing of the front's took part in finishing the render.
        expect(procState(frontPid)).toBe('T');
      } finally {
        process.kill(frontPid, 'SIGCONT');
      }
      // Not a timing assertion: the render ran several heartbeat timeouts after the freeze by construction;
      // a front that heartbeats would have lost its attempt to the timeout (timed-out, then a re-attach).
      expect(frozenFor).toBeGreaterThan(HEARTBEAT_TIMEOUT_MS);
      const attempts = await runPromptAttempts(client, renderIdForKey(key));
      expect(attempts.map((a) => a.outcome)).toEqual(['completed']);
      expect(attempts[0]!.promptId).toBe(promptId);
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.images).toHaveLength(1);
      expectRenderedOnce(await fakeStats(fake.url), { prompts: 1 });
    },
    90_000,
  );

  scenario(
    'the worker process SIGKILLed mid-render: the front starts it again, the render re-attaches and completes once',
    async () => {
      const key = `kill-worker-process-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...LONG, prompt: 'kill the worker process', seed: 32 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      const oldPid = (await workerPid())!;
      expect(oldPid).toBeGreaterThan(0);
      process.kill(oldPid, 'SIGKILL');
      const newPid = await waitFor(
        'a new worker process running',
        async () => {
          const pid = await workerPid();
          return pid !== undefined && pid !== oldPid ? pid : undefined;
        },
        120_000,
        200,
      );
      expect(gone(oldPid)).toBe(true);
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      await expectReattachedOnce(fake.url, client, renderIdForKey(key), promptId);
      // One scrape of the front: its own counters and the new worker process's, merged.
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metricValue(metrics, 'comfy_durable_prompt_reattached_total', { backend: 'comfyui-0' })).toBe(1);
      expect(metricValue(metrics, 'comfy_durable_renders_completed_total', { model: 'imagegen-flux-schnell' })).toBe(1);
      expect(metricValue(metrics, 'comfy_durable_renders_started_total', { model: 'imagegen-flux-schnell' })).toBe(2);
      expect(metrics.match(/^# TYPE comfy_durable_backend_healthy gauge$/gm)).toHaveLength(1);
      expect(metricValue(metrics, 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(1);
      expect(await workerPid()).toBe(newPid);
      // The worker process's log lines come out of the front's stdout, whole (every JSON line parses; the
      // first kept line may be cut by the capture's window): its re-attach, under its pid.
      const lines = svc
        .output()
        .split('\n')
        .slice(1)
        .filter((l) => l.startsWith('{'));
      const parsed = lines.map((l) => JSON.parse(l) as { pid?: number; name?: string; msg?: string });
      expect(parsed.some((l) => l.pid === newPid && l.name === 'comfy-durable-worker' && l.msg?.startsWith('re-attaching to the prompt'))).toBe(true);
      // Relayed by the front, not written beside it: the worker process's stdout is a pipe the front reads, not
      // the pipe the front itself writes to.
      expect(readlinkSync(`/proc/${newPid}/fd/1`)).not.toBe(readlinkSync(`/proc/${svc.child.pid}/fd/1`));
    },
    150_000,
  );

  scenario(
    'a worker process that keeps dying is started again with a growing back-off, the front serving meanwhile',
    async () => {
      const restarting = async (): Promise<{ crashes: number; backoffMs: number } | undefined> => {
        const m = /^restarting after (\d+) crash\(es\) in a row: back-off (\d+) ms/.exec(await workerState());
        return m ? { crashes: Number(m[1]), backoffMs: Number(m[2]) } : undefined;
      };
      process.kill((await workerPid())!, 'SIGKILL');
      const first = await waitFor('a restart scheduled', restarting, 30_000, 50);
      // The next one dies while it starts: one more crash in a row, twice the back-off.
      const starting = await waitFor(
        'the worker process starting again',
        async () => Number(/^starting \(pid (\d+)\)$/.exec(await workerState())?.[1]) || undefined,
        60_000,
        50,
      );
      process.kill(starting, 'SIGKILL');
      const second = await waitFor(
        'the next restart scheduled',
        async () => {
          const r = await restarting();
          return r && r.crashes === first.crashes + 1 ? r : undefined;
        },
        30_000,
        50,
      );
      expect(second.backoffMs).toBe(Math.min(30_000, first.backoffMs * 2));
      expect((await fetch(`${svc.url}/health`)).status).toBe(503);
      expect((await fetch(`${svc.url}/sdapi/v1/sd-models`)).status).toBe(200);
      await waitFor('the worker process running again', workerPid, 120_000, 200);
      const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'after the crashes', seed: 34 });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    },
    150_000,
  );

  scenario(
    'SIGTERM: the waiting client gets its images, the worker process drains and exits, then the front',
    async () => {
      const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, steps: 15, prompt: 'drain start mode', seed: 33 });
      const promptId = await waitRunning(fake.url);
      const worker = (await workerPid())!;
      svc.child.kill('SIGTERM');
      const [r, code] = await Promise.all([pending, exitOf(svc, 60_000)]);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(code).toBe(0);
      expect(gone(worker)).toBe(true);
      expect((await fakeStats(fake.url)).outcomes[promptId]).toEqual(['success']);
    },
    90_000,
  );

  scenario(
    'the front SIGKILLed: its worker process exits too, no orphan',
    async () => {
      const worker = (await workerPid())!;
      expect(procState(worker)).toBeDefined();
      await svc.kill('SIGKILL');
      await waitFor('the orphaned worker process to exit', () => gone(worker), 60_000, 100);
    },
    90_000,
  );
});
