/** What following a prompt takes and gives: its options, its progress reports and its result (follow.ts). */
import type { ComfyLogger } from './client.ts';
import type { EventSession } from './event-stream.ts';
import type { HistoryOutputs } from './schemas.ts';
import type { OutputFile } from './status.ts';

export interface FollowProgress {
  promptId: string;
  state: 'pending' | 'running';
  /** Node currently executing and its progress (`progress` / `progress_state`), when known. */
  node: string | undefined;
  value: number | undefined;
  max: number | undefined;
  /** Epoch ms of the last WebSocket event about this prompt; undefined if none seen yet. */
  lastEventAt: number | undefined;
  /** Epoch ms of the last sign of life (our event, or queue movement): the stall clock. */
  lastActivityAt: number;
  source: 'event' | 'poll';
}

export interface FollowOptions {
  promptId: string;
  /**
   * Socket opened before submitting (`client.openEventStream()`), whose `clientId` the prompt was submitted
   * with. Not closed by followPrompt: the caller owns it (and may reuse it for the next prompt).
   * Omit when re-attaching to a prompt submitted by an earlier attempt: followPrompt opens its own socket.
   */
  session?: EventSession;
  /** `client_id` the prompt was submitted with; defaults to `session.clientId`. */
  clientId?: string;
  /**
   * Re-attach only: the prompt's `client_id` (from `/queue`), whose socket belonged to an earlier attempt
   * that has ended. The follower reclaims it after the settle delay to receive the prompt's progress again.
   */
  ownerClientId?: string;
  signal?: AbortSignal;
  stallTimeoutMs: number;
  pollIntervalMs: number;
  /**
   * ComfyUI refusing every connection this long ends the follow with a ComfyUnavailableError carrying
   * `refusedForMs`: nothing listens on its port, so its process is gone and its queue with it, and waiting
   * the whole stall timeout would only delay moving the prompt elsewhere. Unset: treated like any silence.
   */
  refusedDeadMs?: number;
  /** Called on every event for the prompt and on every poll (heartbeat from here). Must not throw. */
  onProgress?: (p: FollowProgress) => void;
  /**
   * Sampler preview frames of this prompt (sent when it was submitted with `extra_data.preview_method`).
   * Frames without metadata cannot name their prompt: taken while this prompt runs. Must not throw.
   */
  onPreview?: (image: Buffer, format: 'jpeg' | 'png' | 'unknown') => void;
  /** Open a replacement socket when there is none or it dropped (default true). */
  reconnect?: boolean;
  logger?: ComfyLogger;
}

export interface FollowResult {
  promptId: string;
  outputs: HistoryOutputs;
  files: OutputFile[];
  /** ComfyUI's own timestamps (epoch ms) from history, when present. */
  startedAt?: number;
  finishedAt?: number;
  /** How completion was detected: WebSocket `executing:null`, or a status poll. */
  via: 'event' | 'poll';
}
