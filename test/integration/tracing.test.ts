/**
 * OpenTelemetry tracing end to end: the service runs in this process (runServices in `start` mode with its
 * workers here too, on a real Temporal dev server and the fake ComfyUI) with an in-memory exporter. One txt2img is one trace:
 * HTTP request → StartWorkflow → RunWorkflow → StartActivity/RunActivity runPrompt → comfyui.submit (with
 * the prompt id ComfyUI got) → follow → collect. The history that traced render left replays on workers
 * without tracing, so a fleet can turn tracing on worker by worker.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client, Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runServices, type Running } from '../../src/app/services.ts';
import { loadConfig } from '../../src/config/config.ts';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { createLogger } from '../../src/log.ts';
import { OUTCOME_INTERCEPTOR_MODULE } from '../../src/metrics/render-sinks.ts';
import { WORKFLOWS_PATH } from '../../src/worker/worker.ts';
import { freePort } from '../support/ports.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

let temporal: TestTemporal;
let fake: FakeComfyUI;
let running: Running;
let url: string;
const exporter = new InMemorySpanExporter();

beforeAll(async () => {
  temporal = await startTestTemporal();
  fake = await startFakeComfyUI({ port: 0, renderMs: 100 });
  const port = await freePort();
  const config = loadConfig({
    TEMPORAL_ADDRESS: temporal.address,
    COMFYUI_URL: fake.url,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'cd-tracing-')),
    HOST: '127.0.0.1',
    PORT: String(port),
    TEMPORAL_TASK_QUEUE: `renders-${Math.random().toString(36).slice(2, 10)}`,
  });
  // Workers in this process: their spans must reach this exporter.
  running = await runServices('start', config, createLogger('warn', 'tracing-test'), { spanExporter: exporter, workersInProcess: true });
  url = `http://127.0.0.1:${port}`;
}, 180_000);

afterAll(async () => {
  await running?.stop();
  await fake?.close();
  await temporal?.stop();
});

/** Polls the exporter until `done` holds for the finished spans (an event, bounded generously). */
async function spansUntil(done: (spans: ReadableSpan[]) => boolean, timeoutMs = 60_000): Promise<ReadableSpan[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spans = exporter.getFinishedSpans();
    if (done(spans)) return spans;
    if (Date.now() > deadline) throw new Error(`spans incomplete: ${spans.map((s) => s.name).join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const one = (spans: ReadableSpan[], name: string): ReadableSpan => {
  const found = spans.filter((s) => s.name === name);
  expect(
    found.map((s) => s.name),
    `exactly one ${name}`,
  ).toEqual([name]);
  return found[0]!;
};

const childOf = (child: ReadableSpan, parent: ReadableSpan): void => {
  expect(child.spanContext().traceId, `${child.name} in ${parent.name}'s trace`).toBe(parent.spanContext().traceId);
  expect(child.parentSpanId, `${child.name} is a child of ${parent.name}`).toBe(parent.spanContext().spanId);
};

describe('OpenTelemetry tracing', () => {
  let renderId = '';

  it('one txt2img is one trace from the HTTP request to the ComfyUI prompt', async () => {
    const res = await fetch(`${url}/sdapi/v1/txt2img`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'traced', model: 'imagegen-flux-schnell', width: 64, height: 64, seed: 7 }),
    });
    expect(res.status).toBe(200);
    const spans = await spansUntil((s) => ['POST /sdapi/v1/txt2img', 'RunWorkflow:render', 'comfyui.collect'].every((n) => s.some((x) => x.name === n)));

    const http = one(spans, 'POST /sdapi/v1/txt2img');
    expect(http.kind).toBe(SpanKind.SERVER);
    expect(http.parentSpanId, 'the HTTP span is the root').toBeUndefined();
    expect(http.attributes['http.response.status_code']).toBe(200);
    expect(http.attributes['http.route']).toBe('/sdapi/v1/txt2img');

    const start = one(spans, 'StartWorkflow:render');
    const run = one(spans, 'RunWorkflow:render');
    const startPrompt = one(spans, 'StartActivity:runPrompt');
    const runPrompt = one(spans, 'RunActivity:runPrompt');
    const submit = one(spans, 'comfyui.submit');
    childOf(start, http);
    childOf(run, start);
    // Spans made in the sandbox name their workflow, and carry no memo or other workflow-info objects.
    expect(run.attributes).toMatchObject({ workflowId: expect.any(String), workflowType: 'render' });
    expect(Object.keys(run.attributes).sort()).toEqual(['attempt', 'namespace', 'runId', 'taskQueue', 'workflowId', 'workflowType']);
    childOf(startPrompt, run);
    childOf(runPrompt, startPrompt);
    childOf(submit, runPrompt);
    childOf(one(spans, 'comfyui.follow'), runPrompt);
    childOf(one(spans, 'comfyui.collect'), runPrompt);
    // The front builds the graph before the workflow starts (no buildGraph activity).
    const build = one(spans, 'render.buildGraph');
    childOf(build, http);
    expect(
      spans.some((s) => s.name.endsWith(':buildGraph')),
      'no buildGraph activity',
    ).toBe(false);

    // The submit span names the prompt ComfyUI actually ran.
    const stats = (await fetch(`${fake.url}/__fake/stats`).then((r) => r.json())) as { executions: Record<string, number> };
    expect(Object.keys(stats.executions)).toEqual([submit.attributes['comfyui.prompt_id']]);
    expect(submit.attributes['comfyui.reattached']).toBe(false);
    expect(submit.attributes['url.path']).toBe('/prompt');
    expect(submit.kind).toBe(SpanKind.CLIENT);

    // ONE trace: every span of this render (the request, Temporal's, ours) shares the HTTP span's trace.
    renderId = String(runPrompt.attributes['temporalWorkflowId']);
    expect(renderId).not.toBe('undefined');
    expect(build.attributes['render.id']).toBe(renderId);
    const ofRender = spans.filter(
      (s) =>
        s === http ||
        [s.attributes['temporalWorkflowId'], s.attributes['workflowId'], s.attributes['render.id']].includes(renderId) ||
        s.name.startsWith('comfyui.'),
    );
    expect(ofRender.map((s) => s.name).sort()).toEqual(
      [http, build, start, run, startPrompt, runPrompt, submit, 'comfyui.follow', 'comfyui.collect'].map((s) => (typeof s === 'string' ? s : s.name)).sort(),
    );
    expect(new Set(ofRender.map((s) => s.spanContext().traceId))).toEqual(new Set([http.spanContext().traceId]));
  });

  it('a caller-supplied traceparent becomes the HTTP span’s parent', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const res = await fetch(`${url}/sdapi/v1/options`, { headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } });
    expect(res.status).toBe(200);
    const spans = await spansUntil((s) => s.some((x) => x.name === 'GET /sdapi/v1/options'));
    const span = spans.find((x) => x.name === 'GET /sdapi/v1/options')!;
    expect(span.spanContext().traceId).toBe(traceId);
    expect(span.parentSpanId).toBe('b7ad6b7169203331');
  });

  it('the traced render’s history replays on a worker without tracing', async () => {
    expect(renderId).not.toBe('');
    const connection = await Connection.connect({ address: temporal.address });
    try {
      const history = await new Client({ connection }).workflow.getHandle(renderId).fetchHistory();
      // The same interceptor modules as a worker with tracing off (worker.ts workflowInterceptorModules()).
      await Worker.runReplayHistory({ workflowsPath: WORKFLOWS_PATH, interceptors: { workflowModules: [OUTCOME_INTERCEPTOR_MODULE] } }, history, renderId);
    } finally {
      await connection.close();
    }
  }, 120_000);
});
