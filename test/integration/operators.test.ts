/**
 * Operators end to end: after a mix of successful, failed and cancelled renders
 * against the fake ComfyUI, `renders list --status failed` shows exactly the failed ones, `renders show`
 * says why each failed, a bulk replay of a time window re-renders exactly those — each linked to its
 * original, its seed producing the same bytes as a fresh render of that request — and the gallery page
 * shows them with thumbnails in a real headless Chromium. CLI calls run `bin/comfy-durable.js` as a child
 * process, exactly what `npx comfy-durable renders …` runs.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FaultsBody } from '../../tools/fake-comfyui/faults.ts';
import { runRenders } from '../../src/cli/renders.ts';
import type { BulkReplayResult, RenderPage, RenderSummary, RenderTimeline } from '../../src/operators/types.ts';
import { RENDER_REPLAY_OF } from '../../src/contracts/search-attributes.ts';
import { Browser, chromiumMissing } from '../e2e/browser.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { expectImageRender, type ImageRender } from '../../src/contracts/render.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const UI_URL = 'http://temporal-ui.example:8080';
const FAULT_MESSAGE = 'operators test: sampler exploded';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let svc: TestService;
let client: Client;

/** Renders of the mix, by role. */
const ids = { failedBefore: '', ok1: '', failed: [] as string[], cancelled: '', ok2: '', failedAfter: '', interrupted: '', skipped: '' };
const seeds: Record<string, number> = {};
const widths: Record<string, number> = {};
let windowSince = '';
let windowUntil = '';

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The real command as a child process (`bin/comfy-durable.js renders …`): ~2 s each, so used sparingly. */
async function spawnCli(...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(root, 'bin', 'comfy-durable.js'), 'renders', ...args], {
      cwd: root,
      env: { ...process.env, TEMPORAL_ADDRESS: temporal.address, DATA_DIR: svc.dataDir, LOG_LEVEL: 'warn' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * The same command in this process (`runRenders`, what `main.ts renders` calls) with stdout/stderr captured:
 * the many small checks stay fast. Calls must not overlap (they share process.stdout).
 */
async function cli(...args: string[]): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  // Taken off the streams only to be put back on them afterwards, never called detached.
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { write: outWrite } = process.stdout;
  // eslint-disable-next-line @typescript-eslint/unbound-method
  const { write: errWrite } = process.stderr;
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.DATA_DIR = svc.dataDir;
  process.stdout.write = (chunk: string | Uint8Array) => out.push(String(chunk)) > 0;
  process.stderr.write = (chunk: string | Uint8Array) => err.push(String(chunk)) > 0;
  try {
    const code = await runRenders(args);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    process.stdout.write = outWrite;
    process.stderr.write = errWrite;
  }
}

async function cliJson<T>(...args: string[]): Promise<T> {
  const r = await cli(...args, '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

async function http(method: string, route: string, body?: unknown): Promise<{ status: number; json: any; bytes: Buffer; type: string }> {
  const res = await fetch(`${svc.url}${route}`, {
    method,
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, json: type.includes('json') ? JSON.parse(bytes.toString('utf8')) : undefined, bytes, type };
}

async function faults(body: FaultsBody): Promise<void> {
  const res = await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

const base = { model: 'imagegen-flux-schnell', width: 128, height: 128 };

async function txt2img(body: Record<string, unknown>): Promise<{ status: number; renderId: string; image?: Buffer }> {
  const res = await fetch(`${svc.url}/sdapi/v1/txt2img`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as { images?: string[] };
  const renderId = res.headers.get('x-render-id') ?? '';
  expect(renderId).toMatch(/^render-/);
  if (typeof body.seed === 'number') seeds[renderId] = body.seed;
  widths[renderId] = typeof body.width === 'number' ? body.width : 512;
  return { status: res.status, renderId, ...(json.images?.[0] ? { image: Buffer.from(json.images[0], 'base64') } : {}) };
}

async function failing(body: Record<string, unknown>): Promise<string> {
  const r = await txt2img(body);
  expect(r.status).toBe(500);
  return r.renderId;
}

const tick = (): Promise<void> => new Promise((r) => setTimeout(r, 30));

beforeAll(async () => {
  const t0 = Date.now();
  const mark = (what: string): void => {
    if (process.env.TEST_TIMINGS) process.stderr.write(`${what}: ${Date.now() - t0} ms\n`);
  };
  temporal = await startTestTemporal();
  mark('temporal');
  fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
  svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env: { TEMPORAL_UI_URL: UI_URL } });
  client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  mark('service');

  // The mix. Failures are execution errors in the first sampler (ComfyExecution, not retried).
  await faults({ executionError: { type: 'exception', count: 1, message: FAULT_MESSAGE } });
  ids.failedBefore = await failing({ ...base, prompt: 'failed before the window', seed: 100 });
  await tick();
  windowSince = new Date().toISOString();
  ids.ok1 = (await txt2img({ ...base, prompt: 'a lighthouse', seed: 101 })).renderId;
  await faults({ executionError: { type: 'exception', count: 3, message: FAULT_MESSAGE } });
  ids.failed.push(await failing({ ...base, prompt: 'incident one', seed: 102 }));
  ids.failed.push(await failing({ ...base, model: 'imagegen-flux-dev', prompt: 'incident <b>two</b>', seed: 103 }));
  ids.failed.push(await failing({ ...base, prompt: 'incident three', seed: 104, width: 192 }));

  mark('failures');
  // A render cancelled by an operator while it runs (slow sampling keeps it on the GPU).
  await faults({ slow: { stepMs: 1_000 } });
  const pending = txt2img({ ...base, prompt: 'cancel me', seed: 105 });
  const running = await waitFor(async () => (await http('GET', '/renders?status=running')).json.renders[0] as RenderSummary | undefined);
  const cancelled = await cli('cancel', running.id);
  expect(cancelled.code, cancelled.stderr).toBe(0);
  expect(cancelled.stdout).toContain(`cancel requested for ${running.id}`);
  const c = await pending;
  expect(c.status).toBe(409);
  ids.cancelled = c.renderId;
  await faults({ slow: null });

  mark('cancel');
  ids.ok2 = (await txt2img({ ...base, model: 'imagegen-flux-dev', prompt: 'a harbour', seed: 106 })).renderId;
  windowUntil = new Date().toISOString();
  await tick();
  await faults({ executionError: { type: 'exception', count: 1, message: FAULT_MESSAGE } });
  ids.failedAfter = await failing({ ...base, prompt: 'failed after the window', seed: 107 });
  // Stopped renders (after the window): one interrupted while sampling, one batch whose first item is skipped.
  await faults({ slow: { stepMs: 600 } });
  ids.interrupted = await stoppedBy('/sdapi/v1/interrupt', { ...base, prompt: 'interrupt me', seed: 108, steps: 8 });
  ids.skipped = await stoppedBy('/sdapi/v1/skip', { ...base, prompt: 'skip my first', seed: 109, batch_size: 2, steps: 8 });
  await faults({ slow: null });
  mark('mix');
}, 120_000);

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await fake?.close();
  await client?.connection.close();
  await temporal?.stop();
});

/** A render started, then stopped by `route` once it has sampled a step (so it has a partial image). */
async function stoppedBy(route: string, body: Record<string, unknown>): Promise<string> {
  const pending = txt2img(body);
  await waitFor(async () => {
    const p = (await http('GET', '/sdapi/v1/progress?skip_current_image=true')).json as { state: { sampling_step: number } };
    return p.state.sampling_step >= 1 ? true : undefined;
  });
  expect((await http('POST', route)).status).toBe(200);
  const r = await pending;
  expect(r.status).toBe(200);
  return r.renderId;
}

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const allFailed = (): string[] => [ids.failedBefore, ...ids.failed, ids.failedAfter].sort();

describe('finding renders', () => {
  it('`renders list --status failed` shows exactly the failed ones (table and --json)', async () => {
    const table = await cli('list', '--status', 'failed');
    const json = await cliJson<RenderSummary[]>('list', '--status', 'failed');
    const cancelled = await cliJson<RenderSummary[]>('list', '--status', 'cancelled');
    const devFailed = await cliJson<RenderSummary[]>('list', '--status', 'failed', '--model', 'imagegen-flux-dev');
    expect(json.map((r) => r.id).sort()).toEqual(allFailed());
    for (const r of json) {
      expect(r.status).toBe('failed');
      expect(r.reason).toContain(FAULT_MESSAGE);
    }
    expect(table.code).toBe(0);
    const tableIds = table.stdout
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((l) => l.split(/\s+/)[0]);
    expect(tableIds.sort()).toEqual(allFailed());
    expect(table.stdout).toContain('ComfyExecution');
    expect(cancelled.map((r) => r.id)).toEqual([ids.cancelled]);
    expect(devFailed.map((r) => r.id)).toEqual([ids.failed[1]]);
  });

  it('HTTP GET /renders filters and pages with an opaque cursor', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await http('GET', `/renders?status=failed&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      const page = r.json as RenderPage;
      expect(page.renders.length).toBeLessThanOrEqual(2);
      seen.push(...page.renders.map((x) => x.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(seen.sort()).toEqual(allFailed());
    expect(pages).toBeGreaterThanOrEqual(3);

    const window = await http('GET', `/renders?since=${encodeURIComponent(windowSince)}&until=${encodeURIComponent(windowUntil)}`);
    expect((window.json as RenderPage).renders.map((x) => x.id).sort()).toEqual([ids.ok1, ...ids.failed, ids.cancelled, ids.ok2].sort());
    const bad = await http('GET', '/renders?status=exploded');
    expect(bad.status).toBe(400);
    expect(bad.json.field).toBe('status');
    const injected = await http('GET', `/renders?model=${encodeURIComponent("x' OR 1=1")}`);
    expect(injected.status).toBe(400);
    expect(injected.json.field).toBe('model');
  });

  it('`renders list --outcome` and GET /renders?outcome= find interrupted, skipped and failed renders by what happened', async () => {
    const byOutcome = async (outcome: string) => (await cliJson<RenderSummary[]>('list', '--outcome', outcome)).map((r) => r.id).sort();
    expect(await byOutcome('interrupted')).toEqual([ids.interrupted]);
    expect(await byOutcome('skipped')).toEqual([ids.skipped]);
    expect(await byOutcome('failed:ComfyExecution')).toEqual(allFailed());
    const partial = (await http('GET', '/renders?outcome=partial')).json as RenderPage;
    expect(partial.renders.map((r) => r.id).sort()).toEqual([ids.interrupted, ids.skipped].sort());
    const interrupted = partial.renders.find((r) => r.id === ids.interrupted)!;
    expect(interrupted).toMatchObject({ status: 'completed', outcome: 'partial' });
    expect(interrupted.outcomeSummary).toMatch(/^partial: interrupted at step \d+\/8$/);
    expect(partial.renders.find((r) => r.id === ids.skipped)!.outcomeSummary).toMatch(/^partial: item 0 skipped at step \d+\/8$/);
    // GET /renders/{id}: the stopped prompt says so beside its completed activity, with the step it reached.
    const shown = (await http('GET', `/renders/${ids.interrupted}`)).json as RenderTimeline;
    expect(shown.prompts[0]).toMatchObject({ item: 0, outcome: 'completed', stopped: { by: 'interrupt', steps: 8 } });
    const skippedShown = (await http('GET', `/renders/${ids.skipped}`)).json as RenderTimeline;
    expect(skippedShown.prompts.find((p) => p.item === 0)).toMatchObject({ stopped: { by: 'skip', steps: 8 } });
    expect(skippedShown.prompts.find((p) => p.item === 1)?.stopped).toBeUndefined();
    // The table says it beside the status.
    const table = await cli('list', '--outcome', 'partial');
    expect(table.stdout).toMatch(new RegExp(`^${ids.interrupted}\\s+completed\\s+partial\\s`, 'm'));
    const ok = (await http('GET', `/renders?outcome=completed&since=${encodeURIComponent(windowSince)}`)).json as RenderPage;
    expect(ok.renders.map((r) => r.id).sort()).toEqual([ids.ok1, ids.ok2].sort());
    const bad = await http('GET', '/renders?outcome=exploded');
    expect(bad.status).toBe(400);
    expect(bad.json.field).toBe('outcome');
  });

  it('`temporal workflow list --query "RenderModel=…"` finds renders by model', async () => {
    const { stdout } = await run(temporal.binary, [
      'workflow',
      'list',
      '--address',
      temporal.address,
      '--query',
      "RenderModel='imagegen-flux-dev'",
      '--output',
      'jsonl',
    ]);
    const listed = stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { execution: { workflowId: string } });
    expect(listed.map((w) => w.execution.workflowId).sort()).toEqual([ids.failed[1], ids.ok2].sort());
  });
});

describe('showing a render', () => {
  it('`renders show` tells why each failed render failed', async () => {
    const shows: CliResult[] = [];
    for (const id of allFailed()) shows.push(await cli('show', id));
    for (const s of shows) {
      expect(s.code, s.stderr).toBe(0);
      expect(s.stdout).toContain('FAILED');
      expect(s.stdout).toMatch(/REASON: runPrompt: ComfyExecution: ComfyUI node \S+ \(KSampler\) failed: RuntimeError: operators test: sampler exploded/);
      // The timeline, the request, the graph and the prompt id are all there.
      expect(s.stdout).toMatch(/runPrompt\[0\]\s+failed/);
      expect(s.stdout).toContain('KSampler');
      expect(s.stdout).toMatch(/prompts:\n {2}item 0 {2}[0-9a-f-]{36}/);
    }
  });

  it('the timeline JSON (CLI and HTTP) has stages, attempts, request, graphs, prompt ids and outputs', async () => {
    const failedId = ids.failed[0]!;
    const tl = await cliJson<RenderTimeline>('show', failedId);
    const viaHttp = await http('GET', `/renders/${failedId}`);
    expect(viaHttp.status).toBe(200);
    expect(viaHttp.json).toEqual(tl);
    expect(tl.status).toBe('failed');
    expect(tl.request?.seed).toBe(102);
    expect(expectImageRender(tl.request!).prompt).toBe('incident one');
    expect(tl.graphs).toHaveLength(1);
    expect(Object.values(tl.graphs[0]!.graph).some((n) => n.class_type === 'KSampler' && n.inputs.seed === 102)).toBe(true);
    expect(tl.stages.map((s) => [s.name, s.outcome])).toEqual([
      ['buildGraph', 'completed'],
      ['runPrompt[0]', 'failed'],
    ]);
    const attempt = tl.stages[1]!.attempts[0]!;
    expect(attempt).toMatchObject({ attempt: 1, outcome: 'failed', error: { type: 'ComfyExecution', nonRetryable: true } });
    expect(attempt.startedAt).toBeDefined();
    expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
    expect(tl.prompts).toEqual([expect.objectContaining({ item: 0, promptId: attempt.promptId, outcome: 'failed' })]);

    const ok = (await http('GET', `/renders/${ids.ok1}`)).json as RenderTimeline;
    expect(ok.status).toBe('completed');
    expect(ok.outputs).toHaveLength(1);
    expect(ok.stages.map((s) => s.name)).toEqual(['buildGraph', 'runPrompt[0]']);
    // One GPU activity did the whole attempt, on the backend that took it: its result says where the time went.
    expect(ok.stages[1]!.attempts[0]!.backend).toBe('comfyui-0');
    expect(ok.stages[1]!.attempts[0]!.steps?.map((t) => t.stage)).toContain('collectOutputs');
    expect(ok.stages.every((s) => s.outcome === 'completed' && s.attempts.length === 1)).toBe(true);
    expect(ok.prompts[0]?.outcome).toBe('completed');

    // Stopped renders: completed as workflows, partial as renders; each output says what it is.
    const interrupted = (await http('GET', `/renders/${ids.interrupted}`)).json as RenderTimeline;
    expect(interrupted.status).toBe('completed');
    expect(interrupted.outcome).toMatchObject({ outcome: 'partial', interrupted: true });
    expect(interrupted.outputOutcomes).toEqual([expect.objectContaining({ index: 0, item: 0, outcome: 'partial', stoppedBy: 'interrupt', steps: 8 })]);
    const skipped = (await http('GET', `/renders/${ids.skipped}`)).json as RenderTimeline;
    expect(skipped.outputOutcomes?.map((o) => [o.item, o.outcome, o.stoppedBy])).toEqual([
      [0, 'partial', 'skip'],
      [1, 'completed', undefined],
    ]);
    const shown = await cli('show', ids.interrupted);
    expect(shown.stdout).toContain('COMPLETED (PARTIAL)');
    expect(shown.stdout).toMatch(/OUTCOME: partial: interrupted at step \d+\/8/);
    expect(shown.stdout).toMatch(/PARTIAL \(interrupted at step \d+\/8\)/);
    expect(ok.outcome).toEqual({ outcome: 'completed', summary: 'completed: 1 output(s)' });

    const cancelled = (await http('GET', `/renders/${ids.cancelled}`)).json as RenderTimeline;
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.reason).toBe('cancelled');
    expect(cancelled.cancelRequestedAt).toBeDefined();
  });

  it('unknown ids are 404 with the A1111 error envelope; outputs are served from the blob store', async () => {
    const missing = await http('GET', '/renders/render-does-not-exist');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ error: 'HTTPException', field: 'id', body: '', errors: '' });
    expect(missing.json.detail).toContain('render-does-not-exist');
    for (const [method, route] of [
      ['GET', '/renders/render-nope/outputs/0'],
      ['POST', '/renders/render-nope/replay'],
      ['POST', '/renders/render-nope/cancel'],
    ] as const) {
      expect((await http(method, route)).status, route).toBe(404);
    }
    const cli404 = await cli('show', 'render-does-not-exist');
    expect(cli404.code).toBe(1);
    expect(cli404.stderr).toContain('not found');

    const png = await http('GET', `/renders/${ids.ok1}/outputs/0`);
    expect(png.status).toBe(200);
    expect(png.type).toBe('image/png');
    expect(png.bytes.subarray(1, 4).toString()).toBe('PNG');
    expect((await http('GET', `/renders/${ids.ok1}/outputs/1`)).status).toBe(404);
    expect((await http('POST', `/renders/${ids.ok1}/cancel`)).status).toBe(409);
  });
});

describe('replaying failed renders', () => {
  const replays = new Map<string, string>();

  it('a dry run of the window lists exactly the failed renders in it and starts nothing', async () => {
    const before = (await client.workflow.count("WorkflowType = 'render'")).count;
    const dry = await cliJson<BulkReplayResult>('replay', '--failed', '--since', windowSince, '--until', windowUntil, '--dry-run');
    expect(dry.dryRun).toBe(true);
    expect(dry.items.map((i) => i.originalId).sort()).toEqual([...ids.failed].sort());
    expect(dry.items.every((i) => i.renderId === undefined && i.reason?.includes(FAULT_MESSAGE))).toBe(true);
    expect((await client.workflow.count("WorkflowType = 'render'")).count).toBe(before);
  });

  it('a bulk replay re-renders exactly those, each linked to its original, same seed → same bytes as a fresh render', async () => {
    const res = await spawnCli('replay', '--failed', '--since', windowSince, '--until', windowUntil);
    expect(res.code, res.stderr).toBe(0);
    for (const line of res.stdout.split('\n')) {
      const m = /replay {2}(render-\S+) -> (render-\S+)/.exec(line);
      if (m) replays.set(m[1]!, m[2]!);
    }
    expect([...replays.keys()].sort()).toEqual([...ids.failed].sort());
    expect(res.stdout).toContain('3 replayed, 0 skipped');

    const outDir = mkdtempSync(path.join(os.tmpdir(), 'cd-outputs-'));
    const requests = new Map<string, ImageRender>();
    for (const [original, replay] of replays) {
      await client.workflow.getHandle(replay).result();
      const d = await client.workflow.getHandle(replay).describe();
      expect(d.typedSearchAttributes.get(RENDER_REPLAY_OF)).toBe(original);
      expect(d.memo?.replayOf).toBe(original);
      expect(d.memo?.seed).toBe(seeds[original]);
      const linked = (await http('GET', `/renders?replayOf=${original}`)).json as RenderPage;
      expect(linked.renders.map((r) => r.id)).toEqual([replay]);
      // The replay rendered the recorded request of the original, seed included.
      const tl = (await http('GET', `/renders/${replay}`)).json as RenderTimeline;
      expect(tl.replayOf).toBe(original);
      const orig = (await http('GET', `/renders/${original}`)).json as RenderTimeline;
      expect({ ...tl.request, replayOf: undefined }).toEqual({ ...orig.request, replayOf: undefined });
      requests.set(replay, expectImageRender(tl.request!));
    }
    // A fresh client render of each request gives the same bytes as its replay (saved with `renders outputs`).
    const fresh = new Map(
      await Promise.all(
        [...requests].map(
          async ([replay, r]) => [replay, await txt2img({ prompt: r.prompt, model: r.model, seed: r.seed, width: r.width, height: r.height })] as const,
        ),
      ),
    );
    for (const replay of requests.keys()) {
      expect(fresh.get(replay)!.status).toBe(200);
      const saved = await cli('outputs', replay, '--dir', outDir);
      expect(saved.code, saved.stderr).toBe(0);
      const file = path.join(outDir, `${replay}-0.png`);
      expect(saved.stdout.trim()).toBe(file);
      expect(readFileSync(file).equals(fresh.get(replay)!.image!)).toBe(true);
    }

    // Replaying the same incident window again does not render everything twice.
    const again = await cliJson<BulkReplayResult>('replay', '--failed', '--since', windowSince, '--until', windowUntil);
    expect(again.items.map((i) => i.skipped)).toEqual(again.items.map((i) => `already replayed as ${replays.get(i.originalId)}`));
  });

  it('single replays: same seed by default (CLI), a new seed on request (HTTP)', async () => {
    const same = await cliJson<{ renderId: string; seed: number; originalId: string }>('replay', ids.failedAfter);
    expect(same.seed).toBe(107);
    expect(same.originalId).toBe(ids.failedAfter);
    const fresh = await http('POST', `/renders/${ids.failedBefore}/replay`, { newSeed: true });
    expect(fresh.status).toBe(202);
    expect(fresh.json.originalId).toBe(ids.failedBefore);
    expect(fresh.json.seed).not.toBe(100);
    const tl = await waitFor(async () => {
      const t = (await http('GET', `/renders/${fresh.json.renderId}`)).json as RenderTimeline;
      return t.status === 'running' ? undefined : t;
    });
    expect(tl.status).toBe('completed');
    expect(tl.request?.seed).toBe(fresh.json.seed);
    expect(tl.replayOf).toBe(ids.failedBefore);
    await client.workflow.getHandle(same.renderId).result();
    replays.set(ids.failedAfter, same.renderId);
    replays.set(ids.failedBefore, fresh.json.renderId);
  });

  it.skipIf(chromiumMissing !== undefined)(
    `the gallery page shows them with thumbnails (headless Chromium)${chromiumMissing ? ` — skipped: ${chromiumMissing}` : ''}`,
    async () => {
      const browser = await Browser.launch();
      try {
        const page = await browser.newPage();
        await page.goto(`${svc.url}/`);
        await page.waitFor("document.body.dataset.loaded === 'true'");
        // Thumbnails load lazily: those below the fold (the page holds more cards than 900 px show) only now.
        await page.evaluate("document.querySelectorAll('.thumb img').forEach((i) => { i.loading = 'eager'; })");
        await page.waitFor("[...document.querySelectorAll('.thumb img')].every((i) => i.complete && i.naturalWidth > 0)");
        const cards = await page.evaluate<
          { id: string; status: string; thumb: number; reason: string; prompt: string; replay: boolean; ui: string | null; replayOf: string }[]
        >(`
        [...document.querySelectorAll('.card')].map((c) => ({
          id: c.dataset.renderId,
          status: c.dataset.status,
          thumb: c.querySelector('.thumb img')?.naturalWidth ?? 0,
          reason: c.querySelector('.reason')?.textContent ?? '',
          prompt: c.querySelector('.prompt')?.textContent ?? '',
          replay: Boolean(c.querySelector('button.replay')),
          ui: c.querySelector('a.temporal')?.getAttribute('href') ?? null,
          replayOf: c.querySelector('.replay-of a')?.textContent ?? '',
        }))`);
        const byId = new Map(cards.map((c) => [c.id, c]));
        for (const id of allFailed()) {
          const c = byId.get(id);
          expect(c, id).toBeDefined();
          expect(c!.status).toBe('failed');
          expect(c!.reason).toContain(FAULT_MESSAGE);
          expect(c!.replay).toBe(true);
          expect(c!.ui).toBe(`${UI_URL}/namespaces/default/workflows/${id}`);
        }
        for (const [original, replay] of replays) {
          const c = byId.get(replay);
          expect(c?.status, replay).toBe('completed');
          expect(c!.thumb).toBe(widths[original]);
          expect(c!.replayOf).toBe(original);
          expect(c!.replay).toBe(false);
        }
        // User text is shown as text, never as markup.
        expect(byId.get(ids.failed[1]!)?.prompt).toBe('incident <b>two</b>');
        expect(byId.get(ids.cancelled)?.status).toBe('cancelled');
        // What happened, beside the status: the stopped renders are marked partial, with the step reached.
        const outcomes = await page.evaluate<{ id: string; badge: string; summary: string }[]>(`
        [...document.querySelectorAll('.card')].map((c) => ({
          id: c.dataset.renderId,
          badge: c.querySelector('.badge.outcome')?.textContent ?? '',
          summary: c.querySelector('.outcome-summary')?.textContent ?? '',
        }))`);
        const outcome = new Map(outcomes.map((o) => [o.id, o]));
        expect(outcome.get(ids.interrupted)).toMatchObject({ badge: 'partial', summary: expect.stringMatching(/^partial: interrupted at step \d+\/8$/) });
        expect(outcome.get(ids.skipped)).toMatchObject({ badge: 'partial', summary: expect.stringMatching(/^partial: item 0 skipped/) });
        expect(outcome.get(ids.ok1)?.badge).toBe('');
        expect(page.errors).toEqual([]);
        await page.screenshot(path.join(process.env.GALLERY_SCREENSHOT_DIR ?? os.tmpdir(), 'operators-gallery.png'));
      } finally {
        await browser.close();
      }
    },
  );
});
