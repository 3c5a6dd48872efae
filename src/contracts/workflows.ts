/**
 * The workflows as the front, the operators and the tests talk to them: each one's signature (started by its
 * type name, `render`, `webhook` or `retention`, which histories record and must never change), and the
 * signals and queries they answer. Definitions only: the workflow bodies (src/workflows) register handlers
 * for these, the front sends and asks through them, and neither imports the other.
 */
import type { QueryDefinition, SignalDefinition } from '@temporalio/common';
import type { BuiltRender, RetentionRunResult } from './activities.ts';
import type { PartialItem, RenderRequest, RenderResult } from './render.ts';
import type { WebhookDelivery, WebhookStatus } from './webhooks.ts';

/** `render`: the request as resolved and its graphs and limits as built (renders/build-render.ts) in, the result out. */
export type RenderWorkflow = (request: RenderRequest, built: BuiltRender) => Promise<RenderResult>;

/** `webhook`: one render's event delivered, started by the render as an abandoned child when it ends. */
export type WebhookWorkflow = (delivery: WebhookDelivery) => Promise<WebhookResult>;

/** `retention`: one prune, started by the retention schedule (src/retention/schedule.ts). */
export type RetentionWorkflow = () => Promise<RetentionRunResult>;

export interface WebhookResult {
  webhookId: string;
  attempts: number;
  status: number;
  deliveredAt: string;
}

/** One runPrompt attempt as the status query reports it (history has the full failure). */
export interface PromptAttempt {
  item: number;
  attempt: number;
  outcome: 'completed' | 'failed';
  promptId?: string;
  /** Backend the attempt ran on, when known. */
  backend?: string;
  /** Failure type (ComfyStall, ComfyPromptLost, Timeout, WorkerShutdown, ...) and message. */
  type?: string;
  message?: string;
}

export interface RenderStatus {
  /** `waiting`: an item's prompt is in the shared GPU queue or running (progress comes from its heartbeats). */
  stage: 'waiting' | 'done';
  item: number;
  items: number;
  backend?: string;
  promptIds: string[];
  attempts: PromptAttempt[];
  /** Set once `/sdapi/v1/interrupt` stopped the render: it ends with the images finished so far. */
  interrupted?: boolean;
  /** Items `/sdapi/v1/skip` ended early (those in `partial` answer with their partial image). */
  skipped?: number[];
  /** Items stopped by interrupt or skip that answer with their last preview (not a finished image). */
  partial?: PartialItem[];
}

/**
 * What `defineQuery` / `defineSignal` of `@temporalio/workflow` return (a plain `{ type, name }`), written here so
 * that the front, which only sends and asks, does not load the workflow library (its isolate would hold ~1.5 MB
 * more heap for it: bench/README.md, issue 25). Workflows register handlers for these exactly as for the SDK's.
 */
function defineQuery<Ret, Args extends unknown[] = []>(name: string): QueryDefinition<Ret, Args> {
  return { type: 'query', name } as QueryDefinition<Ret, Args>;
}

function defineSignal<Args extends unknown[] = []>(name: string): SignalDefinition<Args> {
  return { type: 'signal', name } as SignalDefinition<Args>;
}

/** The `render` workflow's progress: item, attempts, interrupt and skip state. */
export const renderStatusQuery = defineQuery<RenderStatus>('status');
/** A1111 interrupt: stop the current item and end the render with the images finished so far. */
export const interruptSignal = defineSignal('interrupt');
/** A1111 skip: end the current item of the batch and go on with the next. */
export const skipSignal = defineSignal('skip');

/** The `webhook` workflow's delivery state, as operators report it. */
export const webhookStatusQuery = defineQuery<WebhookStatus>('webhookStatus');
