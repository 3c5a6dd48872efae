/**
 * zod schemas for every ComfyUI HTTP response the client reads (docs/comfyui-protocol.md). Objects are
 * `.loose()`: ComfyUI adds fields between releases and custom nodes add output keys, and an unknown extra
 * field must never fail a render. Only the fields we act on are required.
 */
import { z } from 'zod';

/** `{type, message, details, extra_info}` as produced by `execution.validate_prompt`. */
export const comfyErrorBodySchema = z
  .object({
    type: z.string(),
    message: z.string(),
    details: z.string().optional().default(''),
    extra_info: z.record(z.string(), z.unknown()).optional().default({}),
  })
  .loose();
export type ComfyErrorBody = z.infer<typeof comfyErrorBodySchema>;

export const nodeErrorSchema = z
  .object({
    errors: z.array(comfyErrorBodySchema),
    dependent_outputs: z
      .array(z.union([z.string(), z.number()]))
      .optional()
      .default([]),
    class_type: z.string().optional(),
  })
  .loose();
export const nodeErrorsSchema = z.record(z.string(), nodeErrorSchema);
export type NodeErrors = z.infer<typeof nodeErrorsSchema>;

/** HTTP 200 from `POST /prompt`. `node_errors` may be non-empty: ComfyUI dropped the invalid outputs and queued the rest. */
export const promptResponseSchema = z
  .object({
    prompt_id: z.string(),
    number: z.number(),
    node_errors: nodeErrorsSchema.optional().default({}),
  })
  .loose();

/** HTTP 400 from `POST /prompt`. */
export const promptErrorResponseSchema = z
  .object({
    error: z.union([comfyErrorBodySchema, z.string()]),
    node_errors: nodeErrorsSchema.optional().default({}),
  })
  .loose();

export const fileRefSchema = z
  .object({
    filename: z.string(),
    subfolder: z.string().optional().default(''),
    type: z.enum(['output', 'temp', 'input']).optional().default('output'),
  })
  .loose();

/** `outputs` of a history item: `{node_id: {ui_key: [...]}}`; keys beyond `images` come from other nodes. */
export const historyOutputsSchema = z.record(z.string(), z.record(z.string(), z.unknown()));
export type HistoryOutputs = z.infer<typeof historyOutputsSchema>;

/** `[event_name, data]` pairs recorded by `PromptExecutor.add_message`. */
export const statusMessageSchema = z.tuple([z.string(), z.record(z.string(), z.unknown())]);

export const historyStatusSchema = z
  .object({
    status_str: z.string(),
    completed: z.boolean(),
    messages: z.array(statusMessageSchema).optional().default([]),
  })
  .loose();
export type HistoryStatus = z.infer<typeof historyStatusSchema>;

export const historyItemSchema = z
  .object({
    prompt: z.array(z.unknown()).optional(),
    outputs: historyOutputsSchema.optional().default({}),
    status: historyStatusSchema.optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
export type HistoryItem = z.infer<typeof historyItemSchema>;

/** `GET /history/{id}`: `{id: item}` or `{}` while queued/running or after a restart. */
export const historyResponseSchema = z.record(z.string(), historyItemSchema);

/** `[number, prompt_id, prompt, extra_data, outputs_to_execute]`; only the first two are read. */
export const queueItemSchema = z.tuple([z.number(), z.string()]).rest(z.unknown());

export const queueResponseSchema = z
  .object({
    queue_running: z.array(queueItemSchema),
    queue_pending: z.array(queueItemSchema),
  })
  .loose();

export const jobStatusSchema = z.enum(['pending', 'in_progress', 'completed', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof jobStatusSchema>;

/** Job dict from `comfy_execution/jobs.py` (None values pruned, hence optional). */
export const jobSchema = z
  .object({
    id: z.string(),
    status: jobStatusSchema,
    priority: z.number().optional(),
    create_time: z.number().optional(),
    execution_start_time: z.number().optional(),
    execution_end_time: z.number().optional(),
    execution_error: z.record(z.string(), z.unknown()).optional(),
    outputs_count: z.number().optional(),
    outputs: z.unknown().optional(),
    execution_status: historyStatusSchema.optional(),
    workflow_id: z.string().optional(),
  })
  .loose();
export type Job = z.infer<typeof jobSchema>;

export const jobsListSchema = z
  .object({
    jobs: z.array(jobSchema),
    pagination: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

export const cancelResponseSchema = z.object({ cancelled: z.boolean() }).loose();

export const uploadResponseSchema = z
  .object({
    name: z.string(),
    subfolder: z.string().optional().default(''),
    type: z.enum(['input', 'temp', 'output']).optional().default('input'),
  })
  .loose();

/** `/system_stats`: fields differ across releases; only `system` is required. */
export const systemStatsSchema = z
  .object({
    system: z
      .object({
        os: z.string().optional(),
        comfyui_version: z.string().optional(),
        python_version: z.string().optional(),
        pytorch_version: z.string().optional(),
        ram_total: z.number().optional(),
        ram_free: z.number().optional(),
        argv: z.array(z.string()).optional(),
      })
      .loose(),
    devices: z
      .array(
        z
          .object({
            name: z.string().optional(),
            type: z.string().optional(),
            index: z.number().nullable().optional(),
            vram_total: z.number().optional(),
            vram_free: z.number().optional(),
            torch_vram_total: z.number().optional(),
            torch_vram_free: z.number().optional(),
          })
          .loose(),
      )
      .optional()
      .default([]),
  })
  .loose();
export type SystemStats = z.infer<typeof systemStatsSchema>;

export const featuresSchema = z.record(z.string(), z.unknown());
