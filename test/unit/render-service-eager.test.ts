/**
 * `start` mode starts renders eagerly on the worker's connection (RenderService's eagerStarter): the start
 * asks for the first workflow task in its response, the handle waits on the front's own client, and a
 * failed eager start falls back to an ordinary one without losing or doubling the render.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { RenderService } from '../../src/renders/render-service.ts';
import { clientStarter, fromPlain, fromStartFailure, toPlain, toStartFailure, type RenderStartOptions } from '../../src/renders/eager-start.ts';
import { TypedSearchAttributes, defineSearchAttributeKey } from '@temporalio/common';
import type { BuiltRender } from '../../src/contracts/activities.ts';
import type { RenderRequest } from '../../src/contracts/render.ts';

interface StartCall {
  via: string;
  options: Record<string, unknown>;
}

/** A Client whose workflow.start/getHandle record what they were asked; `fail` makes start throw. */
function fakeClient(via: string, calls: StartCall[], fail?: () => unknown): Client {
  return {
    workflow: {
      start: async (_type: string, options: Record<string, unknown>) => {
        calls.push({ via, options });
        if (fail) throw fail();
        return { workflowId: options.workflowId, firstExecutionRunId: `${via}-run`, via };
      },
      getHandle: (workflowId: string, runId?: string, opts?: { firstExecutionRunId?: string }) => ({
        workflowId,
        runId,
        firstExecutionRunId: opts?.firstExecutionRunId,
        via: `${via}-handle`,
      }),
    },
  } as unknown as Client;
}

const request = { prompt: 'p', model: 'm', kind: 'txt2img', width: 64, height: 64, steps: 1, seed: 1, batchSize: 1, nIter: 1 } as unknown as RenderRequest;
const built = { plan: { items: [] }, limits: { stallTimeoutMs: 1, deadlineMs: 1, heartbeatTimeoutMs: 1, maxAttempts: 1 } } as unknown as BuiltRender;
const startOpts = { renderId: 'render-test-1', built };

describe('RenderService eager start', () => {
  it('starts on the eager client with requestEagerStart and waits through the front client', async () => {
    const calls: StartCall[] = [];
    const svc = new RenderService(fakeClient('front', calls), 'q', clientStarter(fakeClient('worker', calls)));
    const started = await svc.start(request, startOpts);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.via).toBe('worker');
    expect(calls[0]!.options.requestEagerStart).toBe(true);
    // The submitter's graphs are the workflow's second argument: the workflow builds nothing itself.
    expect(calls[0]!.options.args).toEqual([request, built]);
    expect(calls[0]!.options.workflowId).toBe('render-test-1');
    expect(started.handle).toMatchObject({ via: 'front-handle', workflowId: started.renderId, firstExecutionRunId: 'worker-run' });
    expect(started.attached).toBe(false);
    // The run this call started: its close may be told by the workers (closed-runs.ts).
    expect(started.runId).toBe('worker-run');
  });

  it('without an eager client starts the ordinary way', async () => {
    const calls: StartCall[] = [];
    const started = await new RenderService(fakeClient('front', calls), 'q').start(request, startOpts);
    expect(started.runId).toBe('front-run');
    expect(calls.map((c) => c.via)).toEqual(['front']);
    expect(calls[0]!.options.requestEagerStart).toBeUndefined();
  });

  it('falls back to an ordinary start when the eager one fails (the worker connection closing)', async () => {
    const calls: StartCall[] = [];
    const svc = new RenderService(fakeClient('front', calls), 'q', clientStarter(fakeClient('worker', calls, () => new Error('connection closed'))));
    const started = await svc.start(request, startOpts);
    expect(calls.map((c) => c.via)).toEqual(['worker', 'front']);
    expect(calls[1]!.options.requestEagerStart).toBeUndefined();
    expect(calls[1]!.options.workflowId).toBe(calls[0]!.options.workflowId);
    expect(started.handle).toMatchObject({ via: 'front' });
  });

  it('a fallback that finds the render already started (the eager start did reach the server) waits on that render', async () => {
    const calls: StartCall[] = [];
    const svc = new RenderService(
      fakeClient('front', calls, () => new WorkflowExecutionAlreadyStartedError('already', 'id', 'render')),
      'q',
      clientStarter(fakeClient('worker', calls, () => new Error('deadline exceeded'))),
    );
    const started = await svc.start(request, startOpts);
    expect(calls.map((c) => c.via)).toEqual(['worker', 'front']);
    expect(started).toMatchObject({ attached: false, handle: { via: 'front-handle', workflowId: started.renderId } });
  });

  it('an id taken before the eager start is not mistaken for our own render', async () => {
    const calls: StartCall[] = [];
    const svc = new RenderService(
      fakeClient('front', calls),
      'q',
      clientStarter(fakeClient('worker', calls, () => new WorkflowExecutionAlreadyStartedError('already', 'id', 'render'))),
    );
    await expect(svc.start(request, startOpts)).rejects.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
    expect(calls.map((c) => c.via)).toEqual(['worker']);
  });

  it('the start crosses to the worker thread as plain data and comes back the same', () => {
    const key = defineSearchAttributeKey('RenderModel', 'KEYWORD');
    const options = {
      taskQueue: 'q',
      workflowId: 'render-x',
      args: [request, built],
      memo: { a: 1 },
      priority: { priorityKey: 2, fairnessKey: 'key:alice' },
      typedSearchAttributes: new TypedSearchAttributes([{ key, value: 'imagegen-flux-dev' }]),
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
    } as RenderStartOptions;
    // What a MessagePort does to it: no class survives.
    const back = fromPlain(structuredClone(toPlain(options)));
    expect(back.typedSearchAttributes).toBeInstanceOf(TypedSearchAttributes);
    expect((back.typedSearchAttributes as TypedSearchAttributes).get(key)).toBe('imagegen-flux-dev');
    const { typedSearchAttributes: _a, ...rest } = back;
    const { typedSearchAttributes: _b, ...expected } = options;
    expect(rest).toEqual(expected);
  });

  it('a taken id in the worker thread is a WorkflowExecutionAlreadyStartedError on the front again', () => {
    const failure = structuredClone(toStartFailure(new WorkflowExecutionAlreadyStartedError('taken', 'render-x', 'render')));
    expect(fromStartFailure(failure, 'render-x')).toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
    expect(fromStartFailure(structuredClone(toStartFailure(new Error('closed'))), 'render-x')).not.toBeInstanceOf(WorkflowExecutionAlreadyStartedError);
  });
});
