/**
 * The embedded Temporal Web UI, reachable only through the front: `/temporal/…` is forwarded to the dev
 * server's UI, which listens on an ephemeral loopback port with `--ui-public-path /temporal`
 * (src/temporal/dev-server.ts). The UI has no login and no Host check of its own; here every request to it,
 * its API calls (`/temporal/api/v1/…`) and CSRF-protected POSTs included, first passes the front's guards
 * (server.ts): the Host allow-list (DNS rebinding), the cross-origin POST refusal and API_TOKEN.
 *
 * Streaming both ways with node:http (no body is buffered): the route's scope has a catch-all content-type
 * parser that reads nothing, so the request body is still in the socket when it is piped upstream.
 */
import { refuseUnlessOperator } from './clients.ts';
import http from 'node:http';
import { pipeline } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const TEMPORAL_UI_PATH = '/temporal';

/** Hop-by-hop headers (RFC 9110 §7.6.1) are the connection's, not the message's: never forwarded. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export interface TemporalUiProxyOptions {
  /** The UI's own address, e.g. `http://127.0.0.1:40123` (loopback). */
  upstream: string;
}

export function registerTemporalUiProxy(app: FastifyInstance, opts: TemporalUiProxyOptions): void {
  const target = new URL(opts.upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  app.addHook('onClose', async () => agent.destroy());

  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // Leave the body unread: the handler streams it to the UI.
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    const forward = (req: FastifyRequest, reply: FastifyReply): void => {
      // The UI reads and terminates every render: not a room a client key may enter.
      if (refuseUnlessOperator(req, reply, 'the Temporal UI')) return;
      reply.hijack();
      proxy(req, reply, target, agent);
    };
    // Another application's pages and API: not part of this service's document.
    scope.all(TEMPORAL_UI_PATH, { schema: { hide: true } }, forward);
    scope.all(`${TEMPORAL_UI_PATH}/*`, { schema: { hide: true } }, forward);
  });
}

function proxy(req: FastifyRequest, reply: FastifyReply, target: URL, agent: http.Agent): void {
  const headers: http.OutgoingHttpHeaders = {};
  const connectionListed = new Set(
    String(req.headers.connection ?? '')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  for (const [name, value] of Object.entries(req.headers)) {
    // The API token is ours, not the UI's: it does not travel further.
    if (HOP_BY_HOP.has(name) || connectionListed.has(name) || name === 'host' || name === 'authorization' || value === undefined) continue;
    headers[name] = value;
  }
  headers.host = target.host;
  headers['x-forwarded-host'] = req.headers.host ?? '';
  headers['x-forwarded-proto'] = 'http';

  const res = reply.raw;
  const upstream = http.request(
    { protocol: target.protocol, hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
    (answer) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, out);
      pipeline(answer, res, () => undefined);
    },
  );
  upstream.on('error', (err) => {
    req.log.warn({ err: err.message }, 'temporal ui proxy: upstream failed');
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'BadGateway', detail: 'the embedded Temporal UI did not answer' }));
    } else res.destroy(err);
  });
  // A client that goes away takes its upstream request with it.
  res.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  // pipe, not pipeline: a failed upstream must not destroy the client's socket before it is told 502.
  req.raw.on('error', () => upstream.destroy());
  req.raw.pipe(upstream);
}
