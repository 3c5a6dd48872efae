/**
 * ComfyUI WebSocket events (docs/comfyui-protocol.md). Text frames are `{type, data}`; binary frames start
 * with a big-endian u32 type. Parsing is tolerant: an unknown event type, or a known type whose payload does
 * not match, becomes `{type: 'unknown'}` instead of throwing, because a new ComfyUI release or a custom node
 * must never break following a prompt.
 */
import { z } from 'zod';
import { fileRefSchema } from './schemas.ts';

const nodeId = z.union([z.string(), z.number()]).transform(String);

const statusData = z
  .object({
    status: z.object({ exec_info: z.object({ queue_remaining: z.number() }).loose() }).loose(),
    sid: z.string().optional(),
  })
  .loose();

const executionStartData = z.object({ prompt_id: z.string(), timestamp: z.number().optional() }).loose();

const executionCachedData = z.object({ nodes: z.array(nodeId).optional().default([]), prompt_id: z.string(), timestamp: z.number().optional() }).loose();

/** `node: null` = the prompt finished and history is written; no `prompt_id` = replay on reconnect. */
const executingData = z
  .object({
    node: nodeId.nullable(),
    display_node: nodeId.nullable().optional(),
    prompt_id: z.string().optional(),
  })
  .loose();

const progressData = z.object({ value: z.number(), max: z.number(), prompt_id: z.string().optional(), node: nodeId.nullable().optional() }).loose();

const progressStateNode = z
  .object({
    value: z.number(),
    max: z.number(),
    state: z.string(),
    node_id: nodeId.optional(),
    display_node_id: nodeId.nullable().optional(),
  })
  .loose();

const progressStateData = z.object({ prompt_id: z.string(), nodes: z.record(z.string(), progressStateNode) }).loose();

const executedData = z
  .object({
    node: nodeId,
    display_node: nodeId.nullable().optional(),
    output: z.record(z.string(), z.unknown()).nullable().optional(),
    prompt_id: z.string(),
  })
  .loose();

const executionSuccessData = z.object({ prompt_id: z.string(), timestamp: z.number().optional() }).loose();

const executionErrorData = z
  .object({
    prompt_id: z.string(),
    node_id: nodeId.nullable().optional(),
    node_type: z.string().nullable().optional(),
    executed: z.array(nodeId).optional().default([]),
    exception_message: z.string().optional().default(''),
    exception_type: z.string().optional().default(''),
    traceback: z.array(z.string()).optional().default([]),
    current_inputs: z.unknown().optional(),
    current_outputs: z.unknown().optional(),
    timestamp: z.number().optional(),
  })
  .loose();

const executionInterruptedData = z
  .object({
    prompt_id: z.string(),
    node_id: nodeId.nullable().optional(),
    node_type: z.string().nullable().optional(),
    executed: z.array(nodeId).optional().default([]),
    timestamp: z.number().optional(),
  })
  .loose();

const featureFlagsData = z.record(z.string(), z.unknown());

export const eventDataSchemas = {
  status: statusData,
  execution_start: executionStartData,
  execution_cached: executionCachedData,
  executing: executingData,
  progress: progressData,
  progress_state: progressStateData,
  executed: executedData,
  execution_success: executionSuccessData,
  execution_error: executionErrorData,
  execution_interrupted: executionInterruptedData,
  feature_flags: featureFlagsData,
} as const;

type KnownEventType = keyof typeof eventDataSchemas;
export type EventData<T extends KnownEventType> = z.output<(typeof eventDataSchemas)[T]>;

export type StatusEvent = { type: 'status'; data: EventData<'status'> };
export type ExecutionStartEvent = { type: 'execution_start'; data: EventData<'execution_start'> };
export type ExecutionCachedEvent = { type: 'execution_cached'; data: EventData<'execution_cached'> };
export type ExecutingEvent = { type: 'executing'; data: EventData<'executing'> };
export type ProgressEvent = { type: 'progress'; data: EventData<'progress'> };
export type ProgressStateEvent = { type: 'progress_state'; data: EventData<'progress_state'> };
export type ExecutedEvent = { type: 'executed'; data: EventData<'executed'> };
export type ExecutionSuccessEvent = { type: 'execution_success'; data: EventData<'execution_success'> };
export type ExecutionErrorEvent = { type: 'execution_error'; data: EventData<'execution_error'> };
export type ExecutionInterruptedEvent = { type: 'execution_interrupted'; data: EventData<'execution_interrupted'> };
export type FeatureFlagsEvent = { type: 'feature_flags'; data: EventData<'feature_flags'> };
/** Anything else (custom nodes, `logs`, `assets.*`), or a known type whose payload did not validate. */
export type UnknownEvent = { type: 'unknown'; eventType: string; data: unknown; invalid: boolean };

export type ComfyEvent =
  | StatusEvent
  | ExecutionStartEvent
  | ExecutionCachedEvent
  | ExecutingEvent
  | ProgressEvent
  | ProgressStateEvent
  | ExecutedEvent
  | ExecutionSuccessEvent
  | ExecutionErrorEvent
  | ExecutionInterruptedEvent
  | FeatureFlagsEvent
  | UnknownEvent;

const envelope = z.object({ type: z.string(), data: z.unknown() }).loose();

/** Parse one text frame. Never throws. */
export function parseEvent(text: string): ComfyEvent {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { type: 'unknown', eventType: '', data: text, invalid: true };
  }
  const env = envelope.safeParse(raw);
  if (!env.success) return { type: 'unknown', eventType: '', data: raw, invalid: true };
  const { type, data } = env.data;
  if (!Object.hasOwn(eventDataSchemas, type)) return { type: 'unknown', eventType: type, data, invalid: false };
  const schema = eventDataSchemas[type as KnownEventType];
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { type: 'unknown', eventType: type, data, invalid: true };
  return { type, data: parsed.data } as ComfyEvent;
}

/** The prompt an event is about, when it names one. */
export function eventPromptId(ev: ComfyEvent): string | undefined {
  if (ev.type === 'unknown' || ev.type === 'status' || ev.type === 'feature_flags') return undefined;
  return ev.data.prompt_id;
}

/**
 * True for `execution_error` that ends the prompt. The "Execution Blocked" variant sent by
 * `execution_block_cb` mid-run is not terminal and never reaches history.
 */
export function isTerminalExecutionError(ev: ExecutionErrorEvent): boolean {
  return ev.data.exception_type !== 'ExecutionBlocked';
}

/** Files named in an `executed` event's ui output. */
export function executedFiles(ev: ExecutedEvent): z.output<typeof fileRefSchema>[] {
  const out: z.output<typeof fileRefSchema>[] = [];
  for (const value of Object.values(ev.data.output ?? {})) {
    if (!Array.isArray(value)) continue;
    for (const v of value) {
      const f = fileRefSchema.safeParse(v);
      if (f.success) out.push(f.data);
    }
  }
  return out;
}

export const BinaryEventType = {
  PREVIEW_IMAGE: 1,
  UNENCODED_PREVIEW_IMAGE: 2,
  TEXT: 3,
  PREVIEW_IMAGE_WITH_METADATA: 4,
} as const;

export type BinaryFrame =
  | { kind: 'preview_image'; format: 'jpeg' | 'png' | 'unknown'; imageBytes: number; image: Buffer }
  | { kind: 'preview_image_with_metadata'; metadata: Record<string, unknown> | undefined; imageBytes: number; image: Buffer }
  | { kind: 'text'; nodeId: string; text: string }
  | { kind: 'unknown'; eventType: number | undefined; length: number };

/** Classify a binary frame (type 1 preview, 4 preview with metadata, 3 text). Preview images are passed on as bytes (A1111's `current_image`), never decoded. */
export function parseBinaryFrame(buf: Buffer): BinaryFrame {
  if (buf.length < 4) return { kind: 'unknown', eventType: undefined, length: buf.length };
  const t = buf.readUInt32BE(0);
  if (t === BinaryEventType.PREVIEW_IMAGE && buf.length >= 8) {
    const f = buf.readUInt32BE(4);
    return { kind: 'preview_image', format: f === 1 ? 'jpeg' : f === 2 ? 'png' : 'unknown', imageBytes: buf.length - 8, image: buf.subarray(8) };
  }
  if (t === BinaryEventType.PREVIEW_IMAGE_WITH_METADATA && buf.length >= 8) {
    const n = buf.readUInt32BE(4);
    if (8 + n <= buf.length) {
      let metadata: Record<string, unknown> | undefined;
      try {
        const m: unknown = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
        if (m && typeof m === 'object' && !Array.isArray(m)) metadata = m as Record<string, unknown>;
      } catch {
        metadata = undefined;
      }
      return { kind: 'preview_image_with_metadata', metadata, imageBytes: buf.length - 8 - n, image: buf.subarray(8 + n) };
    }
  }
  if (t === BinaryEventType.TEXT && buf.length >= 8) {
    const n = buf.readUInt32BE(4);
    if (8 + n <= buf.length) {
      return { kind: 'text', nodeId: buf.subarray(8, 8 + n).toString('utf8'), text: buf.subarray(8 + n).toString('utf8') };
    }
  }
  return { kind: 'unknown', eventType: t, length: buf.length };
}
