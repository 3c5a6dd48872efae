/**
 * Issue 12's "done when" for one box: with three fake backends behind `npm start` (embedded Temporal, one
 * process, COMFYUI_URL listing three ComfyUIs), no backend sits idle while renders wait, and each prompt runs
 * once. Proven from the fakes' own execution records (start and end of every run) and each render's queue time
 * (its workflow start), by the order of events (test/support/idle-gaps.ts), not by timing bounds.
 */
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FakeStatsSnapshot } from '../../tools/fake-comfyui/state.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { idleWhileWaiting, type BackendRun, type QueuedRender } from '../support/idle-gaps.ts';
import { freePort } from '../support/ports.ts';
import { startService, type TestService } from '../support/service.ts';

const BACKENDS = 3;
const RENDERS = 12;
/** Long enough that renders overlap and a hand-over between two prompts is much shorter than one. */
const RENDER_MS = 2_000;

let fakes: FakeComfyUI[] = [];
let svc: TestService;
let client: Client;

beforeAll(async () => {
  fakes = await Promise.all(Array.from({ length: BACKENDS }, () => startFakeComfyUI({ port: 0, renderMs: RENDER_MS, logLevel: 'silent' })));
  const temporalPort = await freePort();
  // As `npm start` runs it: no TEMPORAL_ADDRESS, so the service starts its embedded dev server.
  svc = await startService({
    comfyUrl: fakes.map((f) => f.url).join(','),
    env: { TEMPORAL_PORT: String(temporalPort), TEMPORAL_UI_PORT: String(await freePort()) },
  });
  client = new Client({ connection: await Connection.connect({ address: `127.0.0.1:${temporalPort}` }) });
}, 180_000);

afterAll(async () => {
  await client?.connection.close();
  await svc?.kill('SIGTERM');
  await Promise.all(fakes.map((f) => f.close()));
});

const stats = (f: FakeComfyUI): Promise<FakeStatsSnapshot> => fetch(`${f.url}/__fake/stats`).then((r) => r.json() as Promise<FakeStatsSnapshot>);

describe('npm start with three ComfyUIs', () => {
  it(`${RENDERS} concurrent renders: no backend idle while a render waits, each prompt run once`, async () => {
    const answers = await Promise.all(
      Array.from({ length: RENDERS }, (_, i) =>
        fetch(`${svc.url}/sdapi/v1/txt2img`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ prompt: `busy ${i}`, model: 'imagegen-flux-schnell', width: 64, height: 64, seed: 500 + i }),
        }).then((r) => r.status),
      ),
    );
    expect(answers).toEqual(Array(RENDERS).fill(200));

    // Each render: when it was queued (workflow start) and the prompt that rendered it.
    const renders: QueuedRender[] = [];
    for await (const wf of client.workflow.list({ query: `TaskQueue = "${svc.taskQueue}"` })) {
      const result = (await client.workflow.getHandle(wf.workflowId).result()) as RenderResult;
      expect(result.promptIds, `${wf.workflowId} rendered one prompt`).toHaveLength(1);
      renders.push({ promptId: result.promptIds[0]!, queuedAt: wf.startTime.getTime() });
    }
    expect(renders).toHaveLength(RENDERS);

    // The fakes' records: every run with its start and end, per backend.
    const all = await Promise.all(fakes.map(stats));
    const runs: BackendRun[] = all.flatMap((s, backend) =>
      s.runs.map((r) => {
        expect(r.endedAt, `run of ${r.promptId} on backend ${backend} ended`).not.toBeNull();
        return { backend, promptId: r.promptId, start: r.startedAt, end: r.endedAt! };
      }),
    );

    // Exactly once: each render's prompt ran once, submitted once, succeeded, and nothing else ran.
    expect(runs.map((r) => r.promptId).sort()).toEqual(renders.map((r) => r.promptId).sort());
    for (const s of all) {
      for (const [id, n] of Object.entries(s.submissions)) expect(n, `prompt ${id} submitted ${n} times`).toBe(1);
      for (const [id, o] of Object.entries(s.outcomes)) expect(o, `prompt ${id} outcomes`).toEqual(['success']);
    }
    // Every backend worked (trivially implied by the check below, and a clearer message when it fails).
    for (const [b, s] of all.entries()) expect(s.runs.length, `backend ${b} ran ${s.runs.length} of ${RENDERS}`).toBeGreaterThan(0);

    // For the log: the hand-over gaps per backend (run end → next start), against the render time.
    const gaps = Array.from({ length: BACKENDS }, (_, b) => {
      const own = runs.filter((r) => r.backend === b).sort((x, y) => x.start - y.start);
      return own.slice(1).map((r, i) => r.start - own[i]!.end);
    });
    console.info(`hand-over gaps per backend (ms, render ${RENDER_MS} ms): ${JSON.stringify(gaps)}`);
    expect(idleWhileWaiting(BACKENDS, runs, renders)).toEqual([]);
  }, 180_000);
});
