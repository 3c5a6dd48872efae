/**
 * The WebSocket side of ComfyUI's `PromptServer` (`websocket_handler`, `send_json`): one socket per client
 * id, events addressed to one id are silently dropped when that socket is not connected, `sid = null`
 * broadcasts. Reusing a client id while the old socket is open reproduces the real bug: the old socket's
 * cleanup later unregisters the new one, which then stays open but silent. Reconnecting right after a clean
 * close works, as recorded: the real server has already run the old socket's cleanup by the time the client
 * sees the close, so only a socket that was still open when its id was reused can unregister the new one.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';

export const SERVER_FEATURE_FLAGS = {
  supports_preview_metadata: true,
  supports_model_type_tags: true,
  max_upload_size: 100 * 1024 * 1024,
  extension: { manager: { supports_v4: true } },
  node_replacements: true,
  assets: false,
} as const;

export interface HubHooks {
  queueRemaining(): number;
  /** Called per frame actually sent; returns true when all sockets must be dropped now (fault). */
  onFrameSent(): boolean;
}

export interface HubCounters {
  framesSent: number;
  framesDropped: number;
  connections: number;
}

export class WsHub {
  readonly sockets = new Map<string, WebSocket>();
  readonly metadata = new Map<string, { featureFlags: Record<string, unknown> }>();
  /** `PromptServer.client_id`: the client id of the prompt executing (or last executed). */
  clientId: string | null = null;
  /** `PromptServer.last_node_id`: set while a prompt with a client id runs, for reconnects. */
  lastNodeId: string | null = null;
  readonly counters: HubCounters = { framesSent: 0, framesDropped: 0, connections: 0 };
  private readonly all = new Set<WebSocket>();
  /** Sockets whose cleanup the real server would already have run (closing when their id was reused). */
  private readonly cleanedUp = new WeakSet<WebSocket>();

  constructor(
    private readonly hooks: HubHooks,
    private readonly log: Logger,
  ) {}

  /** `send_json(event, data, sid)`: `sid` null/undefined broadcasts; an unknown sid drops the event. */
  send(event: string, data: unknown, sid?: string | null): void {
    const frame = JSON.stringify({ type: event, data });
    if (sid === null || sid === undefined) {
      for (const ws of this.sockets.values()) this.sendFrame(ws, frame);
      return;
    }
    const ws = this.sockets.get(sid);
    if (!ws) {
      this.counters.framesDropped++;
      return;
    }
    this.sendFrame(ws, frame);
  }

  /** `send_bytes(event, data, sid)`: a binary frame (previews), addressed like `send`. */
  sendBinary(frame: Buffer, sid?: string | null): void {
    if (sid === null || sid === undefined) {
      for (const ws of this.sockets.values()) this.sendFrame(ws, frame);
      return;
    }
    const ws = this.sockets.get(sid);
    if (!ws) {
      this.counters.framesDropped++;
      return;
    }
    this.sendFrame(ws, frame);
  }

  /** `feature_flags.supports_feature(sockets_metadata, sid, flag)`. */
  supportsFeature(sid: string | null, flag: string): boolean {
    if (sid === null) return false;
    return this.metadata.get(sid)?.featureFlags[flag] === true;
  }

  /** `queue_updated`: status broadcast without sid. */
  sendStatus(): void {
    this.send('status', { status: { exec_info: { queue_remaining: this.hooks.queueRemaining() } } });
  }

  private sendFrame(ws: WebSocket, frame: string | Buffer): void {
    if (ws.readyState !== WebSocket.OPEN) {
      this.counters.framesDropped++;
      return;
    }
    ws.send(frame);
    this.counters.framesSent++;
    if (this.hooks.onFrameSent()) this.dropAll();
  }

  /** Abruptly terminates every socket (fault injection, shutdown). */
  dropAll(): void {
    for (const ws of this.all) ws.terminate();
  }

  /** Number of open sockets, registered or not. */
  openSockets(): number {
    return this.all.size;
  }

  handleConnection(ws: WebSocket, req: IncomingMessage): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let sid = url.searchParams.get('clientId') ?? '';
    if (sid) {
      // Like the real handler: forget the old entry but do not close the old socket.
      const old = this.sockets.get(sid);
      if (old && old.readyState !== WebSocket.OPEN) this.cleanedUp.add(old);
      this.sockets.delete(sid);
    } else {
      sid = randomUUID().replaceAll('-', '');
    }
    this.sockets.set(sid, ws);
    this.metadata.set(sid, { featureFlags: {} });
    this.all.add(ws);
    this.counters.connections++;
    this.log.debug({ sid }, 'websocket connected');

    this.sendFrame(ws, JSON.stringify({ type: 'status', data: { status: { exec_info: { queue_remaining: this.hooks.queueRemaining() } }, sid } }));
    if (this.clientId === sid && this.lastNodeId !== null) {
      this.sendFrame(ws, JSON.stringify({ type: 'executing', data: { node: this.lastNodeId } }));
    }

    let first = true;
    ws.on('message', (raw, isBinary) => {
      const wasFirst = first;
      first = false;
      if (isBinary || !wasFirst) return;
      try {
        // A text frame, and ws's default binaryType: a Buffer.
        const msg = JSON.parse((raw as Buffer).toString()) as { type?: unknown; data?: unknown };
        if (msg.type === 'feature_flags' && msg.data && typeof msg.data === 'object') {
          this.metadata.set(sid, { featureFlags: msg.data as Record<string, unknown> });
          this.sendFrame(ws, JSON.stringify({ type: 'feature_flags', data: SERVER_FEATURE_FLAGS }));
        }
      } catch {
        // Other client messages are ignored, as by the real server.
      }
    });
    ws.on('close', () => {
      this.all.delete(ws);
      if (this.cleanedUp.has(ws)) return;
      // Unconditional pop by sid: this is what unregisters a newer socket that reused the id.
      this.sockets.delete(sid);
      this.metadata.delete(sid);
      this.log.debug({ sid }, 'websocket closed');
    });
    ws.on('error', (err) => this.log.debug({ err, sid }, 'websocket error'));
  }
}
