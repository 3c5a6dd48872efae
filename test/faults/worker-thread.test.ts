/**
 * Fault suite, `start` mode's two threads: the front and its worker thread (app/worker-thread.ts). The service
 * runs with node's inspector on a free loopback port, through which the tests act on one thread at a time
 * (test/support/inspector.ts); the service has no hook of its own for them.
 * - The front's main thread paused outright (the debugger's pause: its event loop runs nothing) for longer than
 *   the heartbeat timeout: the worker thread's heartbeats go on, the render completes in Temporal while the
 *   front is still frozen (a /health sent meanwhile is not answered), with one attempt.
 * - The worker thread crashing mid-render (an uncaught error): the front starts another, the next attempt
 *   re-attaches, the client waiting on the front gets its images, rendered once; /metrics merges the new
 *   thread's counters.
 * - A worker thread that keeps crashing is started again with a doubling back-off; the front serves meanwhile.
 * - The worker thread hung mid-render (a busy loop, issue 27 L2): the front's ping goes unanswered, /health and
 *   /ready report it, the thread is terminated and another started; the render re-attaches and completes once.
 * - SIGTERM: the waiting client gets its images, the worker thread drains and ends, then the front (exit 0).
 * - The front SIGKILLed: nothing of the service is left (a thread cannot outlive its process).
 */
import { readFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { renderIdForKey } from '../../src/renders/render-ids.ts';
import { Inspector, inspectorUrl } from '../support/inspector.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { SCHNELL, a1111, expectRenderedOnce, fakeStats, metricValue, resetFake, scenario, setFaults, waitFor, waitProgress, waitRunning } from './helpers.ts';
import { expectReattachedOnce, runPromptAttempts } from './history.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

const HEARTBEAT_TIMEOUT_MS = 3_000;
// At info: the worker thread's own log lines, relayed by the front, are part of what is checked.
const ENV = {
  // The inspector on a free loopback port (printed on stderr): how the tests reach one thread.
  NODE_OPTIONS: '--inspect=127.0.0.1:0',
  STALL_TIMEOUT_MS: '8000',
  HEARTBEAT_TIMEOUT_MS: String(HEARTBEAT_TIMEOUT_MS),
  POLL_INTERVAL_MS: '200',
  SHUTDOWN_GRACE_MS: '1000',
  // A hung worker thread is reported after 1.5 s without an answer, terminated after 4.5 s.
  WORKER_THREAD_PING_TIMEOUT_MS: '1500',
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

/** The worker thread as /health reports it: running, starting or restarting. */
async function workerState(): Promise<string> {
  const health = (await (await fetch(`${svc.url}/health`)).json()) as { checks: Array<{ name: string; detail?: string }> };
  return health.checks.find((c) => c.name === 'worker-thread')?.detail ?? '';
}

/** The worker thread's id once it is up (`running (thread N)`). */
async function workerThread(): Promise<number | undefined> {
  const m = /^running \(thread (\d+)\)$/.exec(await workerState());
  return m ? Number(m[1]) : undefined;
}

/** The inspector of the service as it runs now (a restart gets a new address). */
async function inspector(): Promise<Inspector> {
  const url = inspectorUrl(svc.output());
  if (!url) throw new Error(`the service printed no inspector address:\n${svc.output().slice(-2_000)}`);
  return Inspector.connect(url);
}

/** Crash the worker thread (the running one, or the one starting). */
async function crashWorkerThread(): Promise<void> {
  const id = Number(/\(thread (\d+)\)$/.exec(await workerState())?.[1]);
  if (!id) throw new Error(`no worker thread to crash: ${await workerState()}`);
  const insp = await inspector();
  try {
    await insp.crashWorker(id);
  } finally {
    insp.close();
  }
}

/** Hang the running worker thread (a busy loop: the thread exists and answers nothing). */
async function hangWorkerThread(id: number): Promise<void> {
  const insp = await inspector();
  try {
    await insp.hangWorker(id);
  } finally {
    insp.close();
  }
}

/** /health's and /ready's status and worker-thread check, read together. */
async function workerChecks(): Promise<{ health: number; ready: number; detail: string }> {
  const [health, ready] = await Promise.all([fetch(`${svc.url}/health`), fetch(`${svc.url}/ready`)]);
  const body = (await health.json()) as { checks: Array<{ name: string; detail?: string }> };
  await ready.arrayBuffer();
  return { health: health.status, ready: ready.status, detail: body.checks.find((c) => c.name === 'worker-thread')?.detail ?? '' };
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

describe('start mode: the worker in its own thread', () => {
  scenario(
    "the front's event loop frozen past the heartbeat timeout: the render completes meanwhile, one attempt",
    async () => {
      const key = `frozen-front-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...LONG, prompt: 'freeze the front', seed: 31 }, { key });
      const promptId = await waitRunning(fake.url);
      // The worker thread runs without the SDK's stack-trace promise hook (src/worker/workflow-stack-traces.ts).
      await expect(client.workflow.getHandle(renderIdForKey(key)).query('__stack_trace')).rejects.toThrow(/stack traces are not enabled/);
      const insp = await inspector();
      let frozenFor: number | undefined;
      try {
        await insp.send('Debugger.enable');
        const paused = insp.next('Debugger.paused');
        await insp.send('Debugger.pause');
        // The pause takes effect at the front's next JavaScript: a request makes it run some.
        let answered = false;
        const probe = fetch(`${svc.url}/health`, { signal: AbortSignal.timeout(120_000) }).then(
          () => (answered = true),
          () => undefined,
        );
        await paused;
        const frozenAt = Date.now();
        await waitFor(
          'the render to complete in Temporal',
          async () => (await client.workflow.getHandle(renderIdForKey(key)).describe()).status.name === 'COMPLETED',
          60_000,
          200,
        );
        frozenFor = Date.now() - frozenAt;
        // Still frozen: the front has not answered a request sent before the render completed.
        expect(answered).toBe(false);
        await insp.send('Debugger.resume');
        await probe;
        expect(answered).toBe(true);
      } finally {
        await insp.send('Debugger.resume').catch(() => undefined);
        insp.close();
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
    'the worker thread crashing mid-render: the front starts another, the render re-attaches and completes once',
    async () => {
      const key = `crash-worker-thread-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...LONG, prompt: 'crash the worker thread', seed: 32 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      const oldThread = (await workerThread())!;
      expect(oldThread).toBeGreaterThan(0);
      await crashWorkerThread();
      const newThread = await waitFor(
        'a new worker thread running',
        async () => {
          const id = await workerThread();
          return id !== undefined && id !== oldThread ? id : undefined;
        },
        120_000,
        200,
      );
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      await expectReattachedOnce(fake.url, client, renderIdForKey(key), promptId);
      // One scrape of the front: its own counters and the new worker thread's, merged.
      const metrics = await (await fetch(`${svc.url}/metrics`)).text();
      expect(metricValue(metrics, 'comfy_durable_prompt_reattached_total', { backend: 'comfyui-0' })).toBe(1);
      expect(metricValue(metrics, 'comfy_durable_renders_completed_total', { model: 'imagegen-flux-schnell' })).toBe(1);
      expect(metricValue(metrics, 'comfy_durable_renders_started_total', { model: 'imagegen-flux-schnell' })).toBe(2);
      // Every render the front waited for was answered once, told by its worker thread or by the long poll.
      const told = (by: string) => metricValue(metrics, 'comfy_durable_render_results_told_total', { by }) ?? 0;
      expect(told('workers') + told('temporal')).toBe(2);
      expect(metrics.match(/^# TYPE comfy_durable_backend_healthy gauge$/gm)).toHaveLength(1);
      expect(metricValue(metrics, 'comfy_durable_backend_healthy', { backend: 'comfyui-0' })).toBe(1);
      expect(await workerThread()).toBe(newThread);
      // The worker thread's log lines come out of the front's stdout, whole (every JSON line parses; the first
      // kept line may be cut by the capture's window): its re-attach, under its thread id.
      const lines = svc
        .output()
        .split('\n')
        .slice(1)
        .filter((l) => l.startsWith('{'));
      const parsed = lines.map((l) => JSON.parse(l) as { workerThread?: number; name?: string; msg?: string });
      expect(parsed.some((l) => l.workerThread === newThread && l.name === 'comfy-durable-worker' && l.msg?.startsWith('re-attaching to the prompt'))).toBe(
        true,
      );
    },
    150_000,
  );

  scenario(
    'a worker thread that keeps crashing is started again with a growing back-off, the front serving meanwhile',
    async () => {
      const restarting = async (): Promise<{ crashes: number; backoffMs: number } | undefined> => {
        const m = /^restarting after (\d+) crash\(es\) in a row: back-off (\d+) ms/.exec(await workerState());
        return m ? { crashes: Number(m[1]), backoffMs: Number(m[2]) } : undefined;
      };
      await waitFor('the worker thread running', workerThread, 120_000, 200);
      await crashWorkerThread();
      const first = await waitFor('a restart scheduled', restarting, 30_000, 50);
      // The next one crashes while it starts: one more crash in a row, twice the back-off.
      await waitFor('the worker thread starting again', async () => /^starting \(thread \d+\)$/.test(await workerState()), 60_000, 50);
      await crashWorkerThread();
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
      await waitFor('the worker thread running again', workerThread, 120_000, 200);
      const r = await a1111(svc.url, 'txt2img', { ...SCHNELL, prompt: 'after the crashes', seed: 34 });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
    },
    150_000,
  );

  scenario(
    'the worker thread hung mid-render: reported by /health and /ready, terminated and started again; the render re-attaches and completes once',
    async () => {
      const key = `hung-worker-thread-${Date.now()}`;
      const pending = a1111(svc.url, 'txt2img', { ...LONG, prompt: 'hang the worker thread', seed: 35 }, { key });
      const promptId = await waitRunning(fake.url);
      await waitProgress(fake.url, promptId, 3);
      const oldThread = (await workerThread())!;
      expect(oldThread).toBeGreaterThan(0);
      const from = svc.output().length;
      await hangWorkerThread(oldThread);
      const hung = await waitFor(
        'the hung thread reported by /health and /ready',
        async () => {
          const c = await workerChecks();
          return c.detail.startsWith('not answering') ? c : undefined;
        },
        30_000,
        100,
      );
      expect(hung).toMatchObject({ health: 503, ready: 503 });
      expect(hung.detail).toMatch(new RegExp(`^not answering for \\d+ ms \\(thread ${oldThread}\\)`));
      await waitFor(
        'a new worker thread running',
        async () => {
          const id = await workerThread();
          return id !== undefined && id !== oldThread ? id : undefined;
        },
        120_000,
        200,
      );
      const r = await pending;
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      await expectReattachedOnce(fake.url, client, renderIdForKey(key), promptId);
      expect(svc.output().slice(from)).toContain('worker thread hung (it answers no ping): terminating it');
    },
    150_000,
  );

  scenario(
    'SIGTERM: the waiting client gets its images, the worker thread drains and ends, then the front',
    async () => {
      const pending = a1111(svc.url, 'txt2img', { ...SCHNELL, steps: 15, prompt: 'drain start mode', seed: 33 });
      const promptId = await waitRunning(fake.url);
      const thread = (await workerThread())!;
      const from = svc.output().length;
      svc.child.kill('SIGTERM');
      const [r, code] = await Promise.all([pending, exitOf(svc, 60_000)]);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(code).toBe(0);
      expect((await fakeStats(fake.url)).outcomes[promptId]).toEqual(['success']);
      // The order, from the service's own log: the front stops taking requests, the worker thread drains its
      // render and ends, and only then does the front close its Temporal connection and exit.
      const msgs = svc
        .output()
        .slice(from)
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg?: string; workerThread?: number });
      const at = (m: string): number => msgs.findIndex((l) => l.msg === m);
      expect(at('worker thread draining')).toBeGreaterThan(at('draining: finishing in-flight work (send the signal again to exit at once)'));
      expect(msgs[at('worker thread drained')]?.workerThread).toBe(thread);
      expect(at('worker thread stopped')).toBeGreaterThan(at('worker thread drained'));
    },
    90_000,
  );

  scenario(
    'the front SIGKILLed: nothing of the service is left running',
    async () => {
      const pid = svc.child.pid!;
      expect(await workerThread()).toBeGreaterThan(0);
      await svc.kill('SIGKILL');
      // The worker is a thread of the front's process: it cannot outlive it (a child process could).
      await waitFor('the service process to be gone', () => gone(pid), 60_000, 100);
    },
    90_000,
  );
});
