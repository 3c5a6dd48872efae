/**
 * The WebSocket of ComfyUI's API (`/ws`, `/api/ws`), taken on the front's HTTP server before Fastify (which
 * has no upgrade routes). The front's guards apply as on every route: a loopback front serves loopback host
 * names only (or ALLOWED_HOSTS), and the API keys (API_TOKEN, API_KEYS) as `Authorization` (Bearer or Basic)
 * or a `token` query value (a browser's WebSocket cannot set headers). The key's name scopes the socket's
 * events to that key's prompts (events.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import { identify, loadApiKeys, type Principal } from '../../auth/keys.ts';
import { isLoopbackHost, normalizeHostName } from '../../config/loopback.ts';
import type { ApiContext } from '../context.ts';
import type { PromptEvents } from './events.ts';

const SOCKET_PATHS = new Set(['/ws', '/api/ws']);
/** Client messages are ignored; none may be large. */
const MAX_MESSAGE_BYTES = 64 * 1024;

export function registerComfyUiSocket(app: FastifyInstance, ctx: ApiContext, events: PromptEvents): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const keys = loadApiKeys(ctx.config);
  /** The key presented in the header or the `token` query value; `null` when keys are configured and none matches. */
  const principal = (req: IncomingMessage, url: URL): Principal | undefined | null => {
    if (keys.length === 0) return undefined;
    const token = url.searchParams.get('token');
    return identify(req.headers.authorization, keys) ?? (token ? identify(`Bearer ${token}`, keys) : undefined) ?? null;
  };
  const extraHosts = new Set(ctx.config.ALLOWED_HOSTS.map((h) => normalizeHostName(h) ?? h.toLowerCase()));
  const refuse = (socket: Duplex, status: number, text: string): void => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  };
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!SOCKET_PATHS.has(url.pathname)) return;
    if (isLoopbackHost(ctx.config.HOST)) {
      const host = normalizeHostName(new URL(`http://${req.headers.host ?? 'invalid'}`).hostname.replace(/^\[|\]$/g, '')) ?? '';
      if (!isLoopbackHost(host) && !extraHosts.has(host)) return refuse(socket, 403, 'Forbidden');
    }
    const who = principal(req, url);
    if (who === null) return refuse(socket, 401, 'Unauthorized');
    const clientId = url.searchParams.get('clientId') || randomUUID().replaceAll('-', '');
    wss.handleUpgrade(req, socket, head, (ws) => events.connect(ws, clientId.slice(0, 200), who?.name));
  });
  app.addHook('onClose', async () => {
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
}
