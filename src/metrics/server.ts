/**
 * `GET /metrics` for a process without the HTTP front (`worker` mode, `METRICS_PORT`): the worker's
 * counters (prompt attempts, stalls, escalations, re-uploads) and the backend gauge. Plain node:http, since
 * it serves one route and must not pull the front's routes into the worker.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.ts';
import { authorized } from '../auth/api-token.ts';
import { renderMetrics } from './metrics.ts';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(opts: { host: string; port: number; token?: string; logger: Logger }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    // The same token as the front's /metrics (scrapers send `Authorization: Bearer <token>`).
    if (opts.token && !authorized(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' }).end('missing or invalid API token\n');
      return;
    }
    renderMetrics().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (err: unknown) => {
        opts.logger.error({ err }, 'rendering metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;
  opts.logger.info({ url: `${url}/metrics` }, 'worker metrics listening');
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
