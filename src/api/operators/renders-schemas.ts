/**
 * What the operator routes (`/renders…`) answer, for `/openapi.json` (declared, not used to serialize:
 * route-schemas.ts). The types are those of src/operators/types.ts; the handlers' return types are checked
 * against these schemas by the type provider.
 */
import { z } from 'zod';
import { RENDER_STATUSES } from '../../operators/types.ts';

const status = z.enum([...RENDER_STATUSES, 'continued-as-new', 'unknown']);
const outcomeName = z.enum(['completed', 'partial', 'blank', 'failed', 'cancelled', 'timed-out', 'terminated']);

const partialItemSchema = z.object({ item: z.number(), step: z.number().optional(), steps: z.number().optional() });
const outcomeSchema = z
  .object({
    outcome: outcomeName,
    summary: z.string(),
    failureClass: z.string().optional(),
    interrupted: z.boolean().optional(),
    skipped: z.array(z.number()).optional(),
    partial: z.array(partialItemSchema).optional().describe('items answered with their partial image, and the sampling step reached'),
    blank: z.array(z.number()).optional().describe('indexes of outputs of one colour'),
  })
  .describe('What happened to the render');
const outputOutcomeSchema = z.object({
  index: z.number(),
  item: z.number().optional(),
  outcome: z.enum(['completed', 'partial']),
  stoppedBy: z.enum(['interrupt', 'skip']).optional(),
  step: z.number().optional(),
  steps: z.number().optional(),
  blank: z.enum(['black', 'uniform']).optional(),
});

const renderSummarySchema = z.object({
  id: z.string(),
  runId: z.string(),
  status,
  taskQueue: z.string(),
  model: z.string().optional(),
  kind: z.string().optional(),
  backend: z.string().optional(),
  replayOf: z.string().optional(),
  owner: z.string().optional().describe('The API key (its name) that started the render'),
  startedAt: z.string().describe('ISO 8601'),
  closedAt: z.string().optional(),
  durationMs: z.number().optional(),
  prompt: z.string().optional(),
  size: z.string().optional(),
  steps: z.number().optional(),
  seed: z.number().optional(),
  images: z.number().optional(),
  priority: z.number().optional().describe('1 most urgent … 5'),
  outputs: z.number().optional().describe('output images of a completed render'),
  reason: z.string().optional().describe('why a failed, timed-out or terminated render ended'),
  outcome: outcomeName
    .optional()
    .describe('what happened to a closed render: completed, partial (interrupt, skip), blank (an output of one colour), failed, …'),
  outcomeSummary: z.string().optional().describe('one line: "partial: interrupted at step 7/20", "blank: output 0 is black (NaN in the VAE)"'),
  failureClass: z.string().optional().describe('failed renders: ComfyExecution, ComfyStall, Timeout, …'),
});

export const renderPageSchema = z
  .object({
    renders: z.array(renderSummarySchema),
    nextCursor: z.string().optional().describe('pass back as cursor for the next page; absent on the last'),
  })
  .describe('A page of renders');

const blobRefSchema = z.object({
  sha256: z.string(),
  size: z.number(),
  mime: z.string(),
  width: z.number().optional(),
  height: z.number().optional(),
  blank: z.enum(['black', 'uniform']).optional(),
});

export const renderTimelineSchema = z
  .object({
    id: z.string(),
    runId: z.string().optional(),
    status,
    taskQueue: z.string().optional(),
    model: z.string().optional(),
    kind: z.string().optional(),
    backend: z.string().optional(),
    replayOf: z.string().optional(),
    startedAt: z.string().optional(),
    closedAt: z.string().optional(),
    durationMs: z.number().optional(),
    memo: z.record(z.string(), z.unknown()),
    priority: z.number().optional(),
    request: z.unknown().optional().describe('the resolved request exactly as the workflow received it'),
    graphs: z.array(z.unknown()).describe('the ComfyUI graph of each output item'),
    prompts: z
      .array(z.unknown())
      .describe('ComfyUI prompts: item, promptId, attempt, times, outcome; `stopped` {by: interrupt|skip, step, steps} when an interrupt or a skip stopped it'),
    outputs: z.array(blobRefSchema),
    outputOutcomes: z.array(outputOutcomeSchema).optional().describe('what happened to each output: completed, or partial (stopped at a step); blank'),
    outcome: outcomeSchema.optional(),
    stages: z.array(z.unknown()).describe('buildGraph, runPrompt[i], stopPrompts: outcome, attempts, errors'),
    timings: z.array(z.unknown()).optional(),
    reason: z.string().optional(),
    failure: z.unknown().optional(),
    cancelRequestedAt: z.string().optional(),
    webhook: z
      .object({
        workflowId: z.string(),
        webhookId: z.string().optional(),
        url: z.string().optional(),
        type: z.string().optional().describe('video.completed, image.failed, …'),
        state: z.enum(['pending', 'delivering', 'failing', 'delivered', 'gave-up']),
        attempts: z.number(),
        maxAttempts: z.number().optional(),
        lastStatus: z.number().optional().describe("the receiver's last HTTP status"),
        lastError: z.string().optional(),
        nextAttemptAt: z.string().optional(),
        deliveredAt: z.string().optional(),
      })
      .optional()
      .describe('the signed webhook of the render, when it has one'),
    workflowTaskFailures: z.array(z.unknown()),
    historyEvents: z.number(),
  })
  .describe('The render');

export const replayAnswerSchema = z
  .object({ originalId: z.string(), renderId: z.string(), seed: z.number(), newSeed: z.boolean() })
  .describe('The new render (X-Render-Id), linked to the original');

export const cancelAnswerSchema = z.object({ renderId: z.string(), status: z.literal('cancel-requested') }).describe('Cancellation requested');
