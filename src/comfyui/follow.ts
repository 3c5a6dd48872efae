/**
 * Follow one submitted prompt to its outcome: the core of "submit and follow" (docs/durability.md).
 *
 * - Event-driven on the happy path: `executing {node: null, prompt_id}` (sent after history is written,
 *   unlike `execution_success`) triggers one `/history/{id}` read and we resolve. No poll delay.
 * - Polling (`promptStatus` + `/queue`) only while there is no socket, or the socket has been silent about
 *   our prompt for `pollIntervalMs`, and at the stall deadline.
 * - A dropped socket is replaced by one with a FRESH client id. ComfyUI sends a prompt's
 *   events only to the socket named by its `client_id`, so the new socket only sees broadcast
 *   `status` frames; each one triggers an immediate status check, which keeps completion prompt.
 * - Progress, though, only ever goes to the prompt's own client id, and without it a long render would look
 *   stalled. So once the owning socket is known closed on ComfyUI's side (it closed the connection; not a
 *   ping timeout, where a half-open socket may still be registered) and a settle delay has let ComfyUI's
 *   cleanup of the old socket run, the follower reclaims the prompt's client id with a new socket. If that
 *   goes wrong (the new socket silently unregistered) we are no worse off than with a fresh id.
 * - Stall ≠ slow: we reject with ComfyStallError only when no event for our prompt arrived AND the queue
 *   did not move for `stallTimeoutMs`. Any event for our prompt (progress, executing, ...) resets it.
 */
import type { ComfyClient, ComfyLogger, QueueSnapshot } from './client.ts';
import type { ComfyGraph } from './graph.ts';
import {
  ComfyAbortError,
  ComfyExecutionError,
  ComfyInterruptedError,
  ComfyPromptLostError,
  ComfyStallError,
  ComfyUnavailableError,
  isConnectionRefused,
  type ExecutionErrorInfo,
} from './errors.ts';
import { eventPromptId, isTerminalExecutionError, type ComfyEvent } from './events.ts';
import type { EventSession } from './event-stream.ts';
import type { HistoryOutputs } from './schemas.ts';
import { executionErrorInfo, statusFromHistory, type OutputFile, type PromptStatus } from './status.ts';

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

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** Time for ComfyUI to run the cleanup of a closed socket before its client id is registered again. */
const REOWN_SETTLE_MS = 1_000;
/**
 * Re-attach: the attempt that owned the socket may still be alive (Temporal gave up on it, e.g. while the
 * server was unreachable); it learns so at its next heartbeat (throttled to 2 s, worker.ts) and closes its
 * socket. Reclaiming the id before that would get the new socket unregistered when the old one closes.
 */
const REOWN_AFTER_REATTACH_MS = 3_500;
/** Reclaims per follow: enough for a few drops, bounded so a flapping server does not loop. */
const MAX_REOWNS = 5;
/** Retries of `/history/{id}` after `executing:null`; it should already be written, this covers proxies. */
const HISTORY_RETRY_MS = [25, 50, 100, 200, 400];

export function followPrompt(client: ComfyClient, opts: FollowOptions): Promise<FollowResult> {
  return new Follower(client, opts).run();
}

export interface SubmitAndFollowOptions extends Omit<FollowOptions, 'session' | 'clientId'> {
  graph: ComfyGraph;
  /** Deterministic id (derivePromptId) so a retried attempt finds the prompt it already submitted. */
  promptId: string;
  extraData?: Record<string, unknown>;
  /** Called once the prompt is known to ComfyUI (submitted now, or found from an earlier attempt). */
  onSubmitted?: (info: { promptId: string; reattached: boolean }) => void;
  /**
   * On abort or stall, best-effort cancel the prompt in ComfyUI (jobs cancel, else dequeue + targeted
   * interrupt) before rejecting, so the GPU is free for the next attempt. Default true.
   */
  cancelOnAbortOrStall?: boolean;
}

/**
 * Idempotent submit-and-follow: if ComfyUI already knows `promptId` (a retried attempt after a worker
 * crash), re-attach instead of submitting twice; otherwise open a socket, submit with its client id and
 * follow. The status check and the socket open run in parallel to keep the happy path short.
 */
export async function submitAndFollow(client: ComfyClient, opts: SubmitAndFollowOptions): Promise<FollowResult & { reattached: boolean }> {
  const { graph, extraData, onSubmitted, cancelOnAbortOrStall, ...follow } = opts;
  const call = opts.signal ? { signal: opts.signal } : {};
  const [statusR, sessionR] = await Promise.allSettled([client.promptStatus(opts.promptId, call), client.openEventStream(call)]);
  const session = sessionR.status === 'fulfilled' ? sessionR.value : undefined;
  // Set before the POST goes out: an abort while it is in flight may still leave the prompt queued.
  let mayExist = false;
  try {
    if (statusR.status === 'rejected') throw statusR.reason;
    const reattached = statusR.value.state !== 'unknown';
    mayExist = true;
    if (!reattached) {
      const input: Parameters<ComfyClient['submitPrompt']>[0] = { graph, promptId: opts.promptId };
      if (session) input.clientId = session.clientId;
      if (extraData) input.extraData = extraData;
      await client.submitPrompt(input, call);
    }
    onSubmitted?.({ promptId: opts.promptId, reattached });
    const fo: FollowOptions = { ...follow };
    if (session) {
      fo.session = session;
      // A socket opened after an earlier attempt submitted does not own the prompt (any other clientId
      // says so): followPrompt then relies on status broadcasts and polls.
      if (reattached) fo.clientId = '';
    }
    return { ...(await followPrompt(client, fo)), reattached };
  } catch (e) {
    if (mayExist && (cancelOnAbortOrStall ?? true) && (e instanceof ComfyAbortError || e instanceof ComfyStallError)) {
      await client
        .cancelJob(opts.promptId, { timeoutMs: 5000 })
        .catch((ce: unknown) => opts.logger?.warn({ promptId: opts.promptId, err: ce }, 'cancel after abort/stall failed'));
    }
    throw e;
  } finally {
    await session?.close();
  }
}

class Follower {
  private readonly id: string;
  private readonly startAt = Date.now();
  private settled = false;
  private resolveFn!: (r: FollowResult) => void;
  private rejectFn!: (e: Error) => void;

  private state: 'pending' | 'running' = 'pending';
  private node: string | undefined;
  private value: number | undefined;
  private max: number | undefined;
  private lastOurEventAt: number | undefined;
  private lastActivityAt: number;
  private lastPollAt: number;
  private queueBaseline: QueueSnapshot | undefined;
  private lastQueueRemaining: number | undefined;
  private lastCheckFailed = false;
  /** Since when every status check was refused (ECONNREFUSED); undefined once one was not. */
  private refusedSince: number | undefined;
  private eventError: ExecutionErrorInfo | undefined;

  private socket: EventSession | undefined;
  private socketOwned = false;
  private socketIsOwner = false;
  private unsubscribe: (() => void) | undefined;
  private reconnectDelay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnecting = false;
  /** The prompt's own client id, when we know it and may reclaim it (see the file comment). */
  private readonly ownerId: string | undefined;
  private reowns = 0;
  private reownTimer: NodeJS.Timeout | undefined;
  private reowning = false;

  private timer: NodeJS.Timeout | undefined;
  private checking = false;
  private checkAgain = false;
  private finalizing = false;
  private readonly onAbort = (): void => this.fail(new ComfyAbortError(this.opts.signal?.reason));

  constructor(
    private readonly client: ComfyClient,
    private readonly opts: FollowOptions,
  ) {
    this.id = opts.promptId;
    this.lastActivityAt = this.startAt;
    this.lastPollAt = this.startAt;
    const submittedWith = opts.clientId ?? opts.session?.clientId;
    this.ownerId = opts.ownerClientId || submittedWith || undefined;
  }

  run(): Promise<FollowResult> {
    const p = new Promise<FollowResult>((resolve, reject) => {
      this.resolveFn = resolve;
      this.rejectFn = reject;
    });
    const { signal, session } = this.opts;
    if (signal?.aborted) {
      this.fail(new ComfyAbortError(signal.reason));
      return p;
    }
    signal?.addEventListener('abort', this.onAbort, { once: true });

    const owner = session !== undefined && (this.opts.clientId === undefined || this.opts.clientId === session.clientId);
    if (session?.isOpen) {
      this.attach(session, false, owner);
    } else {
      this.scheduleReconnect(0);
    }
    // Re-attaching: the prompt's socket belonged to an attempt that has ended; take its id back.
    if (!this.socketIsOwner && this.opts.ownerClientId) this.scheduleReown(REOWN_AFTER_REATTACH_MS);
    // With the owning socket, events tell us everything (incl. replayed ones); otherwise look now, since the
    // prompt may have progressed or finished while nobody was listening (re-attach, dropped socket).
    if (!this.socketIsOwner) this.requestCheck();
    this.schedule();
    return p;
  }

  // ------------------------------------------------------------ settle

  private cleanup(): void {
    this.settled = true;
    clearTimeout(this.timer);
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.reownTimer);
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.socket && this.socketOwned) void this.socket.close();
    this.socket = undefined;
  }

  private succeed(r: FollowResult): void {
    if (this.settled) return;
    this.cleanup();
    this.resolveFn(r);
  }

  private fail(e: Error): void {
    if (this.settled) return;
    this.cleanup();
    this.rejectFn(e);
  }

  /** Returns true when the status ended following. */
  private settleFrom(st: PromptStatus, via: 'event' | 'poll'): boolean {
    switch (st.state) {
      case 'success': {
        const r: FollowResult = { promptId: this.id, outputs: st.outputs, files: st.files, via };
        if (st.startedAt !== undefined) r.startedAt = st.startedAt;
        if (st.finishedAt !== undefined) r.finishedAt = st.finishedAt;
        this.succeed(r);
        return true;
      }
      case 'error':
        this.fail(new ComfyExecutionError(st.error));
        return true;
      case 'interrupted':
        this.fail(new ComfyInterruptedError(this.id, st.nodeId));
        return true;
      case 'unknown':
        this.fail(new ComfyPromptLostError(this.id));
        return true;
      default:
        return false;
    }
  }

  // ------------------------------------------------------------ events

  private attach(session: EventSession, owned: boolean, isOwner: boolean): void {
    this.socket = session;
    this.socketOwned = owned;
    this.socketIsOwner = isOwner;
    this.lastQueueRemaining = undefined;
    this.unsubscribe = session.subscribe(
      {
        onEvent: (ev, at) => this.onEvent(ev, at),
        onBinary: (frame) => {
          if (this.settled || !this.opts.onPreview) return;
          if (frame.kind === 'preview_image') this.opts.onPreview(frame.image, frame.format);
          else if (frame.kind === 'preview_image_with_metadata' && (frame.metadata?.prompt_id === undefined || frame.metadata.prompt_id === this.id)) {
            this.opts.onPreview(frame.image, 'unknown');
          }
        },
        onClose: (info) => {
          if (this.settled || this.socket !== session) return;
          this.opts.logger?.info({ promptId: this.id, clientId: session.clientId, code: info.code }, 'ComfyUI socket closed while following');
          const wasOwner = this.socketIsOwner;
          this.unsubscribe = undefined;
          this.socket = undefined;
          this.socketIsOwner = false;
          this.requestCheck();
          this.scheduleReconnect(this.reconnectDelay);
          // Closed by ComfyUI (not by us, not a ping timeout): its registration is going away, so the id can
          // be taken back once the cleanup has run.
          if (wasOwner && !info.byUs && !info.pingTimeout) this.scheduleReown();
        },
      },
      { replay: true },
    );
  }

  private onEvent(ev: ComfyEvent, at: number): void {
    if (this.settled) return;
    if (ev.type === 'status') {
      const qr = ev.data.status.exec_info.queue_remaining;
      // Only a shrinking queue is movement: new submissions by others say nothing about our prompt.
      if (this.lastQueueRemaining !== undefined && qr < this.lastQueueRemaining) this.activity(at);
      this.lastQueueRemaining = qr;
      // A socket that does not own the prompt gets no prompt events; a queue change may be our completion.
      if (!this.socketIsOwner) this.requestCheck();
      return;
    }
    const pid = eventPromptId(ev);
    // `executing` without prompt_id is the server's replay of the running node on (re)connect.
    const ours = pid === this.id || (pid === undefined && ev.type === 'executing' && this.socketIsOwner && ev.data.node !== null);
    if (!ours) return;

    this.lastOurEventAt = at;
    this.activity(at);
    switch (ev.type) {
      case 'execution_start':
        this.state = 'running';
        break;
      case 'executing':
        if (ev.data.node === null) {
          void this.finalize();
          return;
        }
        this.state = 'running';
        if (ev.data.node !== this.node) {
          this.node = ev.data.node;
          this.value = undefined;
          this.max = undefined;
        }
        break;
      case 'progress':
        this.state = 'running';
        if (ev.data.node != null) this.node = ev.data.node;
        this.value = ev.data.value;
        this.max = ev.data.max;
        break;
      case 'progress_state': {
        this.state = 'running';
        const running = Object.entries(ev.data.nodes).find(([, n]) => n.state === 'running');
        if (running) {
          this.node = running[1].node_id ?? running[0];
          this.value = running[1].value;
          this.max = running[1].max;
        }
        break;
      }
      case 'execution_error':
        // History (read on executing:null) is authoritative; keep this in case history cannot be read.
        if (isTerminalExecutionError(ev)) this.eventError = executionErrorInfo(this.id, ev.data);
        break;
      default:
        break;
    }
    this.progress('event');
    this.schedule();
  }

  /** `executing:null` for our prompt: history is written; read it once (retrying briefly) and settle. */
  private async finalize(): Promise<void> {
    if (this.finalizing || this.settled) return;
    this.finalizing = true;
    try {
      for (let i = 0; ; i++) {
        const item = await this.client.getHistory(this.id, this.callOpts());
        if (this.settled) return;
        if (item) {
          this.settleFrom(statusFromHistory(this.id, item), 'event');
          return;
        }
        if (this.eventError) {
          this.fail(new ComfyExecutionError(this.eventError));
          return;
        }
        const delay = HISTORY_RETRY_MS[i];
        if (delay === undefined) break;
        await sleep(delay);
        if (this.settled) return;
      }
      this.opts.logger?.warn({ promptId: this.id }, 'history still empty after executing:null; falling back to status checks');
    } catch (e) {
      if (this.settled) return;
      this.opts.logger?.warn({ promptId: this.id, err: e }, 'reading history after executing:null failed; falling back to status checks');
    } finally {
      this.finalizing = false;
    }
    this.requestCheck();
  }

  // ------------------------------------------------------------ polling and stall

  private activity(at: number): void {
    if (at > this.lastActivityAt) this.lastActivityAt = at;
  }

  private progress(source: 'event' | 'poll'): void {
    if (!this.opts.onProgress) return;
    try {
      this.opts.onProgress({
        promptId: this.id,
        state: this.state,
        node: this.node,
        value: this.value,
        max: this.max,
        lastEventAt: this.lastOurEventAt,
        lastActivityAt: this.lastActivityAt,
        source,
      });
    } catch (e) {
      this.opts.logger?.warn({ promptId: this.id, err: e }, 'onProgress threw');
    }
  }

  private callOpts(): { signal?: AbortSignal } {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  /** Next wake-up: a poll when silent, a queue baseline half-way to the stall deadline, the stall check. */
  private schedule(): void {
    if (this.settled) return;
    clearTimeout(this.timer);
    const { pollIntervalMs, stallTimeoutMs } = this.opts;
    const pollDue = Math.max(this.lastOurEventAt ?? 0, this.lastPollAt) + pollIntervalMs;
    const stallDue = this.lastActivityAt + stallTimeoutMs;
    const baselineDue = this.queueBaseline ? Infinity : this.lastActivityAt + stallTimeoutMs / 2;
    const wake = Math.min(pollDue, stallDue, baselineDue);
    this.timer = setTimeout(() => this.requestCheck(), Math.max(0, wake - Date.now()));
  }

  private requestCheck(): void {
    if (this.settled) return;
    if (this.checking || this.finalizing) {
      this.checkAgain = true;
      return;
    }
    void this.check();
  }

  private async check(): Promise<void> {
    this.checking = true;
    try {
      let st: PromptStatus | undefined;
      let queue: QueueSnapshot | undefined;
      try {
        [st, queue] = await Promise.all([this.client.promptStatus(this.id, this.callOpts()), this.client.getQueue(this.callOpts())]);
        this.lastCheckFailed = false;
        this.refusedSince = undefined;
      } catch (e) {
        if (this.settled) return;
        this.lastCheckFailed = true;
        this.opts.logger?.warn({ promptId: this.id, err: e }, 'ComfyUI status check failed');
        if (this.deadFromRefusals(e)) return;
      }
      if (this.settled) return;
      const now = Date.now();
      this.lastPollAt = now;
      if (st && this.settleFrom(st, 'poll')) return;
      if (st && (st.state === 'pending' || st.state === 'running')) {
        if (st.state !== this.state) this.activity(now);
        this.state = st.state;
      }
      if (queue) {
        if (this.queueBaseline && queueMoved(this.queueBaseline, queue)) this.activity(now);
        this.queueBaseline = queue;
      }
      if (st) this.progress('poll');
      const silentFor = now - this.lastActivityAt;
      if (silentFor >= this.opts.stallTimeoutMs) {
        const init: ConstructorParameters<typeof ComfyStallError>[0] = {
          promptId: this.id,
          silentForMs: silentFor,
          state: this.lastCheckFailed ? 'unreachable' : this.state,
        };
        if (this.lastOurEventAt !== undefined) init.lastEventAt = this.lastOurEventAt;
        this.fail(new ComfyStallError(init));
        return;
      }
    } finally {
      this.checking = false;
    }
    if (this.checkAgain) {
      this.checkAgain = false;
      this.requestCheck();
    }
    this.schedule();
  }

  /** Counts a failed check; true (and the follow failed) once connections were refused for refusedDeadMs. */
  private deadFromRefusals(e: unknown): boolean {
    const deadMs = this.opts.refusedDeadMs;
    if (!isConnectionRefused(e)) {
      this.refusedSince = undefined;
      return false;
    }
    const now = Date.now();
    this.refusedSince ??= now;
    if (deadMs === undefined || now - this.refusedSince < deadMs) return false;
    const refusedForMs = now - this.refusedSince;
    const url = e instanceof ComfyUnavailableError ? e.url : 'ComfyUI';
    this.fail(new ComfyUnavailableError({ url, refusedForMs, cause: e, message: `ComfyUI at ${url} refused every connection for ${Math.round(refusedForMs / 1000)} s while prompt ${this.id} was ${this.state}: its process is gone` }));
    return true;
  }

  // ------------------------------------------------------------ reconnect

  private scheduleReconnect(delayMs: number): void {
    if (this.settled || this.opts.reconnect === false || this.reconnecting) return;
    this.reconnecting = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.reconnect(), delayMs);
  }

  private async reconnect(): Promise<void> {
    let session: EventSession;
    try {
      session = await this.client.openEventStream(this.callOpts());
    } catch (e) {
      this.reconnecting = false;
      if (this.settled) return;
      this.opts.logger?.debug({ promptId: this.id, err: e }, 'ComfyUI socket reconnect failed');
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, Math.max(RECONNECT_MIN_MS, Math.min(RECONNECT_MAX_MS, this.opts.pollIntervalMs)));
      this.scheduleReconnect(this.reconnectDelay);
      return;
    }
    this.reconnecting = false;
    // Settled, or the prompt's own id was reclaimed meanwhile (a better socket than this one).
    if (this.settled || (this.socket && this.socketIsOwner)) {
      void session.close();
      return;
    }
    this.reconnectDelay = RECONNECT_MIN_MS;
    // A fresh id never owns the prompt (it was submitted with another client_id): only broadcasts arrive.
    this.attach(session, true, false);
    this.requestCheck();
  }

  // ------------------------------------------------------------ reclaiming the prompt's client id

  private scheduleReown(delayMs = REOWN_SETTLE_MS): void {
    if (this.settled || !this.ownerId || this.opts.reconnect === false || this.reowning || this.reowns >= MAX_REOWNS) return;
    this.reowns++;
    this.reowning = true;
    clearTimeout(this.reownTimer);
    this.reownTimer = setTimeout(() => void this.reown(), delayMs);
  }

  private async reown(): Promise<void> {
    const clientId = this.ownerId!;
    let session: EventSession;
    try {
      session = await this.client.openEventStream({ ...this.callOpts(), clientId });
    } catch (e) {
      this.reowning = false;
      if (this.settled) return;
      this.opts.logger?.debug({ promptId: this.id, err: e }, 'reclaiming the prompt socket failed');
      this.scheduleReown();
      return;
    }
    this.reowning = false;
    if (this.settled || (this.socket && this.socketIsOwner)) {
      void session.close();
      return;
    }
    const old = this.socket;
    const oldOwned = this.socketOwned;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (old && oldOwned) void old.close();
    this.opts.logger?.info({ promptId: this.id, clientId }, 'reclaimed the prompt socket: progress events flow again');
    this.attach(session, true, true);
    // Events sent while nobody owned the id were dropped by ComfyUI: look at the prompt once.
    this.requestCheck();
  }
}

/** Movement = the running set changed, or a pending item left the queue. New arrivals do not count. */
function queueMoved(before: QueueSnapshot, after: QueueSnapshot): boolean {
  if (before.runningIds.length !== after.runningIds.length) return true;
  if (before.runningIds.some((id, i) => after.runningIds[i] !== id)) return true;
  const pendingNow = new Set(after.pendingIds);
  return before.pendingIds.some((id) => !pendingNow.has(id));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
