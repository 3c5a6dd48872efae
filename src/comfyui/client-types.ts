/**
 * What the ComfyUI client (client.ts) takes and returns: options, timeouts and the shapes of its results.
 */
import type { ComfyGraph } from './graph.ts';
import type { NodeErrors } from './schemas.ts';
import type { ComfyLogger } from './transport.ts';

export interface ComfyTimeouts {
  /** Ordinary JSON calls. */
  requestMs: number;
  /** `/upload/image` and `/view` (large bodies). */
  transferMs: number;
  /** `/object_info` (large, and slow with many custom nodes). */
  objectInfoMs: number;
  /** WebSocket connect + welcome frame. */
  wsOpenMs: number;
  /** WebSocket ping interval; a missing pong by the next ping terminates the socket. 0 disables. */
  wsPingIntervalMs: number;
}

export const DEFAULT_TIMEOUTS: ComfyTimeouts = {
  requestMs: 30_000,
  transferMs: 120_000,
  objectInfoMs: 60_000,
  wsOpenMs: 10_000,
  wsPingIntervalMs: 20_000,
};

export interface ComfyClientOptions {
  /** e.g. `http://127.0.0.1:8188` (a path prefix is kept, for ComfyUI behind a reverse proxy). */
  baseUrl: string;
  logger?: ComfyLogger;
  timeouts?: Partial<ComfyTimeouts>;
  /** Keep-alive connections to this backend. */
  connections?: number;
  /**
   * Keep an event socket open for the next prompt (`refillSocketAhead`, `takeEventStream`): a socket's open
   * (~2 ms on a loaded 2-core box) is then off the prompt's submit. For a service's long-lived clients; closed
   * by `closeSocketAhead`.
   */
  keepSocketAhead?: boolean;
}

export interface SubmitPromptInput {
  graph: ComfyGraph;
  /** Canonical lowercase UUID (see prompt-id.ts); omitted → ComfyUI mints one. */
  promptId?: string;
  /** The event session's id: ComfyUI sends this prompt's events only to that socket. */
  clientId?: string;
  extraData?: Record<string, unknown>;
  /** Priority: lower runs first. */
  number?: number;
  front?: boolean;
  /**
   * ComfyUI queues a partial prompt when some outputs fail validation (HTTP 200 + node_errors). We throw,
   * and by default also cancel that partial prompt so it does not occupy the GPU.
   */
  cancelPartial?: boolean;
}

export interface SubmitPromptResult {
  promptId: string;
  number: number;
  nodeErrors: NodeErrors;
}

export interface QueueEntry {
  number: number;
  promptId: string;
  /** `extra_data.client_id`: the socket this prompt's events go to (re-attach uses it, see follow.ts). */
  clientId: string | undefined;
  raw: unknown[];
}

export interface QueueSnapshot {
  running: QueueEntry[];
  pending: QueueEntry[];
  runningIds: string[];
  pendingIds: string[];
}

export interface UploadImageInput {
  /** A Blob is uploaded as it is (a file-backed one streams from disk). */
  bytes: Buffer | Uint8Array | Blob;
  filename: string;
  subfolder?: string;
  type?: 'input' | 'temp' | 'output';
  overwrite?: boolean;
  /** Content type of the part; ComfyUI ignores it, proxies may not. */
  mime?: string;
}

export interface UploadResult {
  name: string;
  subfolder: string;
  type: 'input' | 'temp' | 'output';
}

export type CancelResult =
  /** v0.26+: atomic interrupt-if-running / dequeue-if-pending; `cancelled` says whether anything happened. */
  | { method: 'jobs-api'; cancelled: boolean }
  /** Older: `/queue {delete}` then a targeted `/interrupt`; the outcome is not reported. */
  | { method: 'queue-delete+interrupt' };

export interface Capabilities {
  version: string | undefined;
  jobsApi: boolean;
}
