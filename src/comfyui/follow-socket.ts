/**
 * The socket a follow listens on (follow.ts): the one it was given, a replacement with a fresh client id
 * after a drop, and the prompt's own client id reclaimed once ComfyUI has let go of it (follow.ts's file
 * comment says why each).
 */
import type { ComfyClient } from './client.ts';
import type { ComfyEvent } from './events.ts';
import type { EventSession } from './event-stream.ts';
import type { FollowOptions } from './follow-types.ts';

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** Time for ComfyUI to run the cleanup of a closed socket before its client id is registered again. */
const REOWN_SETTLE_MS = 1_000;
/** Reclaims per follow: enough for a few drops, bounded so a flapping server does not loop. */
const MAX_REOWNS = 5;

/** What the follower does with what the socket hears. */
export interface FollowSocketHandlers {
  onEvent: (ev: ComfyEvent, at: number) => void;
  /** A socket is being attached: counters read from the previous socket's frames no longer apply. */
  onAttach: () => void;
  /** Events may have been missed (the socket dropped, or a new one was attached): look at the prompt. */
  checkNow: () => void;
}

export class FollowSocket {
  private closed = false;
  private socket: EventSession | undefined;
  private socketOwned = false;
  private socketIsOwner = false;
  private unsubscribe: (() => void) | undefined;
  private reconnectDelay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnecting = false;
  private reowns = 0;
  private reownTimer: NodeJS.Timeout | undefined;
  private reowning = false;

  /** `ownerId`: the prompt's own client id, when we know it and may reclaim it. */
  constructor(
    private readonly client: ComfyClient,
    private readonly opts: FollowOptions,
    private readonly ownerId: string | undefined,
    private readonly handlers: FollowSocketHandlers,
  ) {}

  /** Whether the attached socket owns the prompt's client id (and so receives the prompt's events). */
  get isOwner(): boolean {
    return this.socketIsOwner;
  }

  /** Stops listening for good: timers cleared, the socket closed if it is ours. */
  close(): void {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearTimeout(this.reownTimer);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (this.socket && this.socketOwned) void this.socket.close();
    this.socket = undefined;
  }

  private callOpts(): { signal?: AbortSignal } {
    return this.opts.signal ? { signal: this.opts.signal } : {};
  }

  attach(session: EventSession, owned: boolean, isOwner: boolean): void {
    this.socket = session;
    this.socketOwned = owned;
    this.socketIsOwner = isOwner;
    this.handlers.onAttach();
    this.unsubscribe = session.subscribe(
      {
        onEvent: (ev, at) => this.handlers.onEvent(ev, at),
        onBinary: (frame) => {
          if (this.closed || !this.opts.onPreview) return;
          if (frame.kind === 'preview_image') this.opts.onPreview(frame.image, frame.format);
          else if (
            frame.kind === 'preview_image_with_metadata' &&
            (frame.metadata?.prompt_id === undefined || frame.metadata.prompt_id === this.opts.promptId)
          ) {
            this.opts.onPreview(frame.image, 'unknown');
          }
        },
        onClose: (info) => {
          if (this.closed || this.socket !== session) return;
          this.opts.logger?.info({ promptId: this.opts.promptId, clientId: session.clientId, code: info.code }, 'ComfyUI socket closed while following');
          const wasOwner = this.socketIsOwner;
          this.unsubscribe = undefined;
          this.socket = undefined;
          this.socketIsOwner = false;
          this.handlers.checkNow();
          this.scheduleReconnect(this.reconnectDelay);
          // Closed by ComfyUI (not by us, not a ping timeout): its registration is going away, so the id can
          // be taken back once the cleanup has run.
          if (wasOwner && !info.byUs && !info.pingTimeout) this.scheduleReown();
        },
      },
      { replay: true },
    );
  }

  // ------------------------------------------------------------ reconnect

  scheduleReconnect(delayMs: number): void {
    if (this.closed || this.opts.reconnect === false || this.reconnecting) return;
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
      if (this.closed) return;
      this.opts.logger?.debug({ promptId: this.opts.promptId, err: e }, 'ComfyUI socket reconnect failed');
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, Math.max(RECONNECT_MIN_MS, Math.min(RECONNECT_MAX_MS, this.opts.pollIntervalMs)));
      this.scheduleReconnect(this.reconnectDelay);
      return;
    }
    this.reconnecting = false;
    // Settled, or the prompt's own id was reclaimed meanwhile (a better socket than this one).
    if (this.closed || (this.socket && this.socketIsOwner)) {
      void session.close();
      return;
    }
    this.reconnectDelay = RECONNECT_MIN_MS;
    // A fresh id never owns the prompt (it was submitted with another client_id): only broadcasts arrive.
    this.attach(session, true, false);
    this.handlers.checkNow();
  }

  // ------------------------------------------------------------ reclaiming the prompt's client id

  scheduleReown(delayMs = REOWN_SETTLE_MS): void {
    if (this.closed || !this.ownerId || this.opts.reconnect === false || this.reowning || this.reowns >= MAX_REOWNS) return;
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
      if (this.closed) return;
      this.opts.logger?.debug({ promptId: this.opts.promptId, err: e }, 'reclaiming the prompt socket failed');
      this.scheduleReown();
      return;
    }
    this.reowning = false;
    if (this.closed || (this.socket && this.socketIsOwner)) {
      void session.close();
      return;
    }
    const old = this.socket;
    const oldOwned = this.socketOwned;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (old && oldOwned) void old.close();
    this.opts.logger?.info({ promptId: this.opts.promptId, clientId }, 'reclaimed the prompt socket: progress events flow again');
    this.attach(session, true, true);
    // Events sent while nobody owned the id were dropped by ComfyUI: look at the prompt once.
    this.handlers.checkNow();
  }
}
