/**
 * Starts render workflows and waits for them: the only place the front talks to Temporal about renders.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  TerminatedFailure,
  TimeoutFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import type { RenderRequest, RenderResult } from '../render/types.ts';
import { RENDER_KIND, RENDER_MODEL, RENDER_REPLAY_OF } from '../temporal/search-attributes.ts';
import type { render } from '../workflows/render.ts';
import { bodyFingerprint, newRenderId, renderIdForKey } from './render-ids.ts';

export interface StartOptions {
  idempotencyKey?: string;
  /** The raw client body, to detect a reused Idempotency-Key with a different body. */
  body?: unknown;
}

export interface StartedRender {
  renderId: string;
  handle: WorkflowHandle<typeof render>;
  /** True when an Idempotency-Key attached this call to an earlier render. */
  attached: boolean;
}

/** A render that ended without images, classified for the HTTP layer. */
export class RenderFailedError extends Error {
  override name = 'RenderFailedError';
  constructor(
    readonly renderId: string,
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export class IdempotencyConflictError extends Error {
  override name = 'IdempotencyConflictError';
}

function memoFor(request: RenderRequest, fingerprint?: string): Record<string, unknown> {
  return {
    prompt: request.prompt.slice(0, 200),
    size: `${request.width}x${request.height}`,
    steps: request.steps,
    seed: request.seed,
    images: request.batchSize * request.nIter,
    ...(fingerprint ? { bodyFingerprint: fingerprint } : {}),
  };
}

export class RenderService {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
  ) {}

  async start(request: RenderRequest, opts: StartOptions = {}): Promise<StartedRender> {
    const fingerprint = opts.idempotencyKey !== undefined ? bodyFingerprint(opts.body) : undefined;
    const renderId = opts.idempotencyKey !== undefined ? renderIdForKey(opts.idempotencyKey) : newRenderId();
    const searchAttributes = [
      { key: RENDER_MODEL, value: request.model },
      { key: RENDER_KIND, value: request.kind },
      ...(request.replayOf ? [{ key: RENDER_REPLAY_OF, value: request.replayOf }] : []),
    ];
    try {
      const handle = await this.client.workflow.start<typeof render>('render', {
        taskQueue: this.taskQueue,
        workflowId: renderId,
        args: [request],
        memo: memoFor(request, fingerprint),
        typedSearchAttributes: new TypedSearchAttributes(searchAttributes),
        // A key maps to one render for good: a retry after it finished must return the same images.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
      return { renderId, handle, attached: false };
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError) || fingerprint === undefined) throw err;
      const handle = this.client.workflow.getHandle<typeof render>(renderId);
      const described = await handle.describe();
      const memo = (await described.memo) ?? {};
      if (memo.bodyFingerprint !== fingerprint) {
        throw new IdempotencyConflictError(
          `Idempotency-Key was already used with a different request body (render ${renderId})`,
        );
      }
      return { renderId, handle, attached: true };
    }
  }

  async wait(started: StartedRender): Promise<RenderResult> {
    try {
      return await started.handle.result();
    } catch (err) {
      throw classifyFailure(started.renderId, err);
    }
  }

  handle(renderId: string): WorkflowHandle<typeof render> {
    return this.client.workflow.getHandle<typeof render>(renderId);
  }
}

/** Map a workflow failure to an HTTP status and a message naming what ComfyUI said. */
export function classifyFailure(renderId: string, err: unknown): RenderFailedError {
  if (!(err instanceof WorkflowFailedError)) {
    return new RenderFailedError(renderId, 502, 'Unavailable', `render ${renderId}: ${String(err)}`);
  }
  let cause: unknown = err.cause;
  while (cause instanceof ActivityFailure && cause.cause) cause = cause.cause;
  if (cause instanceof CancelledFailure) {
    return new RenderFailedError(renderId, 409, 'Cancelled', `render ${renderId} was cancelled`);
  }
  if (cause instanceof TerminatedFailure) {
    return new RenderFailedError(renderId, 409, 'Terminated', `render ${renderId} was terminated`);
  }
  if (cause instanceof TimeoutFailure) {
    return new RenderFailedError(renderId, 504, 'Timeout', `render ${renderId} timed out (${cause.timeoutType})`);
  }
  if (cause instanceof ApplicationFailure) {
    const type = cause.type ?? 'Error';
    const details = cause.details?.[0];
    // ComfyUI rejected the graph: the request was fine by our schema but not renderable as configured
    // (missing model file, node not installed). That is the server's configuration, hence 422, not 5xx.
    const status = type === 'ComfyValidation' || type === 'InvalidRender' ? 422 : 500;
    return new RenderFailedError(renderId, status, type, `render ${renderId} failed: ${cause.message}`, details);
  }
  const message = err.cause?.message ?? err.message;
  return new RenderFailedError(renderId, 500, 'Error', `render ${renderId} failed: ${message}`);
}
