/**
 * One ComfyUI WebSocket connection (`/ws?clientId=<fresh id>`), as a session a caller submits through.
 *
 * - Each session has a FRESH client id: reusing an id while the old socket may still be closing can leave
 *   the new socket unregistered and silent.
 * - Events are delivered to listeners and kept in a small replay ring, so a follower that subscribes after
 *   the prompt was submitted still sees the events that raced ahead of it (the server never replays).
 * - The socket pings: ComfyUI configures no heartbeat, and a half-open TCP connection would otherwise look
 *   like a silent, healthy socket forever.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { RawData } from 'ws';
import { ComfyAbortError, ComfyUnavailableError } from './errors.ts';
import { parseBinaryFrame, parseEvent, type BinaryFrame, type ComfyEvent } from './events.ts';

export interface CloseInfo {
  code: number;
  reason: string;
  /** True when `close()` was called on our side. */
  byUs: boolean;
  /**
   * True when we terminated the socket because a ping went unanswered: the connection may be half-open and
   * ComfyUI may still hold it registered, so its client id must not be reused.
   */
  pingTimeout?: boolean;
}

export interface EventListener {
  onEvent?(ev: ComfyEvent, receivedAt: number): void;
  /** Binary frames (previews, text progress). Followers ignore them. */
  onBinary?(frame: BinaryFrame, receivedAt: number): void;
  onClose?(info: CloseInfo): void;
}

export interface EventSession {
  /** Submit prompts with this as `client_id`: ComfyUI sends their events only to this socket. */
  readonly clientId: string;
  readonly openedAt: number;
  /** Epoch ms of the last frame of any kind (text, binary, pong). */
  readonly lastMessageAt: number;
  readonly isOpen: boolean;
  /** `queue_remaining` from the most recent `status` event. */
  readonly queueRemaining: number | undefined;
  /** Resolves when the socket has closed, for any reason. Never rejects. */
  readonly closed: Promise<CloseInfo>;
  /**
   * Register a listener. With `replay` (default true) it first receives the recent events buffered since
   * the session opened (bounded ring), so nothing between `submitPrompt` and `subscribe` is lost.
   */
  subscribe(listener: EventListener, opts?: { replay?: boolean }): () => void;
  /** The same stream as an async iterator; it ends when the socket closes. */
  events(opts?: { replay?: boolean }): AsyncIterableIterator<ComfyEvent>;
  /**
   * Drop the buffered events but the latest `status`: a socket opened ahead of its prompt (ComfyClient
   * `keepSocketAhead`) then replays what a socket opened just now would, the queue as it stands.
   */
  forgetEvents(): void;
  /** Close and wait until the socket is really closed (terminate after a grace period). */
  close(): Promise<void>;
}

export interface OpenEventStreamOptions {
  /** `ws://host:port/prefix` (no `/ws`). */
  wsBaseUrl: string;
  clientId?: string;
  signal?: AbortSignal;
  openTimeoutMs: number;
  pingIntervalMs: number;
  replayBufferSize?: number;
}

const CLOSE_GRACE_MS = 1000;

class WsEventSession implements EventSession {
  readonly clientId: string;
  readonly openedAt: number;
  lastMessageAt: number;
  queueRemaining: number | undefined;
  readonly closed: Promise<CloseInfo>;

  private readonly ws: WebSocket;
  private readonly listeners = new Set<EventListener>();
  private readonly ring: { ev: ComfyEvent; at: number }[] = [];
  private readonly ringSize: number;
  private closeInfo: CloseInfo | undefined;
  private closingByUs = false;
  private pingTimer: NodeJS.Timeout | undefined;
  private awaitingPong = false;
  private pingTimedOut = false;
  private resolveClosed!: (info: CloseInfo) => void;

  constructor(ws: WebSocket, clientId: string, pingIntervalMs: number, ringSize: number) {
    this.ws = ws;
    this.clientId = clientId;
    this.openedAt = Date.now();
    this.lastMessageAt = this.openedAt;
    this.ringSize = ringSize;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));

    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('pong', () => {
      this.awaitingPong = false;
      this.lastMessageAt = Date.now();
    });
    ws.on('close', (code: number, reason: Buffer) => this.onClose(code, reason.toString('utf8')));
    // 'error' is always followed by 'close'; a listener is required so ws does not throw.
    ws.on('error', () => undefined);

    if (pingIntervalMs > 0) {
      this.pingTimer = setInterval(() => {
        if (this.awaitingPong) {
          this.pingTimedOut = true;
          ws.terminate();
          return;
        }
        this.awaitingPong = true;
        try {
          ws.ping();
        } catch {
          ws.terminate();
        }
      }, pingIntervalMs);
      this.pingTimer.unref();
    }
  }

  get isOpen(): boolean {
    return this.closeInfo === undefined && this.ws.readyState === WebSocket.OPEN;
  }

  /** Handles frames; also used while waiting for the welcome `status`. */
  onMessage(data: RawData, isBinary: boolean): void {
    const at = Date.now();
    this.lastMessageAt = at;
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (isBinary) {
      const frame = parseBinaryFrame(buf);
      for (const l of [...this.listeners]) l.onBinary?.(frame, at);
      return;
    }
    const ev = parseEvent(buf.toString('utf8'));
    if (ev.type === 'status') this.queueRemaining = ev.data.status.exec_info.queue_remaining;
    this.ring.push({ ev, at });
    if (this.ring.length > this.ringSize) this.ring.shift();
    for (const l of [...this.listeners]) l.onEvent?.(ev, at);
  }

  private onClose(code: number, reason: string): void {
    if (this.closeInfo) return;
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.closeInfo = { code, reason, byUs: this.closingByUs, pingTimeout: this.pingTimedOut };
    for (const l of [...this.listeners]) l.onClose?.(this.closeInfo);
    this.listeners.clear();
    this.resolveClosed(this.closeInfo);
  }

  subscribe(listener: EventListener, opts?: { replay?: boolean }): () => void {
    if (opts?.replay ?? true) for (const { ev, at } of [...this.ring]) listener.onEvent?.(ev, at);
    if (this.closeInfo) {
      listener.onClose?.(this.closeInfo);
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  events(opts?: { replay?: boolean }): AsyncIterableIterator<ComfyEvent> {
    const buffer: ComfyEvent[] = [];
    let done = false;
    let wake: (() => void) | undefined;
    const unsubscribe = this.subscribe(
      {
        onEvent: (ev) => {
          buffer.push(ev);
          wake?.();
        },
        onClose: () => {
          done = true;
          wake?.();
        },
      },
      opts,
    );
    const it: AsyncIterableIterator<ComfyEvent> = {
      next: async () => {
        while (buffer.length === 0 && !done) await new Promise<void>((r) => (wake = r));
        wake = undefined;
        const ev = buffer.shift();
        return ev ? { value: ev, done: false } : { value: undefined, done: true };
      },
      return: async () => {
        done = true;
        unsubscribe();
        wake?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return it;
      },
    };
    return it;
  }

  forgetEvents(): void {
    const status = this.ring.findLast((e) => e.ev.type === 'status');
    this.ring.length = 0;
    if (status) this.ring.push(status);
  }

  async close(): Promise<void> {
    if (this.closeInfo) return;
    this.closingByUs = true;
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN) {
      try {
        this.ws.close(1000, 'client closing');
      } catch {
        this.ws.terminate();
      }
    }
    const timer = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    await this.closed;
    clearTimeout(timer);
  }

  /** Abort before the session was handed out. */
  kill(): void {
    this.closingByUs = true;
    this.ws.terminate();
  }
}

/**
 * Connect and wait for ComfyUI's welcome `status` frame (which carries our id as `sid`): only then is the
 * socket registered server-side, so a prompt submitted afterwards with `clientId` gets its events.
 */
export function openEventStream(opts: OpenEventStreamOptions): Promise<EventSession> {
  const clientId = opts.clientId ?? randomUUID();
  const url = `${opts.wsBaseUrl.replace(/\/$/, '')}/ws?clientId=${encodeURIComponent(clientId)}`;
  if (opts.signal?.aborted) return Promise.reject(new ComfyAbortError(opts.signal.reason));

  return new Promise<EventSession>((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: opts.openTimeoutMs });
    const session = new WsEventSession(ws, clientId, opts.pingIntervalMs, opts.replayBufferSize ?? 256);
    let settled = false;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      if (err) {
        session.kill();
        reject(err);
      } else {
        resolve(session);
      }
    };
    const onAbort = (): void => finish(new ComfyAbortError(opts.signal?.reason));
    const timer = setTimeout(
      () => finish(new ComfyUnavailableError({ url, message: `ComfyUI WebSocket ${url}: no welcome status within ${opts.openTimeoutMs} ms` })),
      opts.openTimeoutMs,
    );
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let lastError: Error | undefined;
    ws.on('error', (e: Error) => (lastError = e));
    const unsubscribe = session.subscribe(
      {
        // Any first text frame means the handler registered us; ComfyUI's first frame is `status` with sid.
        onEvent: () => finish(),
        onClose: (info) =>
          finish(
            new ComfyUnavailableError({
              url,
              message: `ComfyUI WebSocket ${url} closed before welcome (code ${info.code})${lastError ? `: ${lastError.message}` : ''}`,
              cause: lastError,
            }),
          ),
      },
      { replay: false },
    );
  });
}
