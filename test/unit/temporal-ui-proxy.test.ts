/**
 * The /temporal/ proxy to the embedded UI (src/api/temporal-ui-proxy.ts) against a stand-in upstream: bodies
 * stream through (the upstream has the first chunk while the client still holds the rest), the path and
 * query arrive as sent, the API token and hop-by-hop headers stay behind, the upstream's status, headers and
 * cookies come back, and a dead upstream is a 502. The guards in front of it are tested with the real UI in
 * test/integration/embedded.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTemporalUiProxy } from '../../src/api/temporal-ui-proxy.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  firstChunkAt?: number;
  body: string;
}

let upstream: http.Server;
let app: FastifyInstance;
let deadApp: FastifyInstance;
let base: string;
let deadBase: string;
const seen: Seen[] = [];
let firstChunk: () => void = () => undefined;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' };
    seen.push(s);
    req.on('data', (c: Buffer) => {
      if (s.firstChunkAt === undefined) {
        s.firstChunkAt = Date.now();
        firstChunk();
      }
      s.body += c.toString();
    });
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': '_csrf=abc; Path=/; SameSite=Strict', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ got: s.body.length }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  app = Fastify();
  registerTemporalUiProxy(app, { upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  // An upstream that is not there: a port just freed.
  const gone = http.createServer();
  await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
  const goneUrl = `http://127.0.0.1:${(gone.address() as AddressInfo).port}`;
  await new Promise<void>((r) => gone.close(() => r()));
  deadApp = Fastify({ logger: false });
  registerTemporalUiProxy(deadApp, { upstream: goneUrl });
  deadBase = await deadApp.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  await deadApp?.close();
  await new Promise<void>((r) => upstream.close(() => r()));
});

describe('Temporal UI proxy', () => {
  it('streams a request body through before the client has sent all of it', async () => {
    const gotFirst = new Promise<void>((r) => (firstChunk = r));
    const u = new URL(`${base}/temporal/api/v1/namespaces/default/workflows/x/terminate?a=1&b=%2F`);
    const res = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          method: 'POST',
          path: `${u.pathname}${u.search}`,
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer secret',
            'x-csrf-token': 'abc',
            connection: 'keep-alive, x-drop-me',
            'x-drop-me': '1',
          },
        },
        (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, headers: r.headers, body }));
        },
      );
      req.on('error', reject);
      req.write('{"reason":"');
      // The rest only once the upstream has the first part: a proxy that buffered would never get here.
      void gotFirst.then(() => req.end(`${'x'.repeat(100_000)}"}`));
    });
    expect(res.status).toBe(201);
    expect(res.headers['x-upstream']).toBe('yes');
    expect(res.headers['set-cookie']).toEqual(['_csrf=abc; Path=/; SameSite=Strict']);
    const s = seen.at(-1)!;
    expect(s.method).toBe('POST');
    expect(s.url).toBe('/temporal/api/v1/namespaces/default/workflows/x/terminate?a=1&b=%2F');
    expect(s.body.length).toBe(100_000 + '{"reason":"'.length + 2);
    expect(JSON.parse(res.body)).toEqual({ got: s.body.length });
    expect(s.headers.authorization).toBeUndefined();
    expect(s.headers['x-drop-me']).toBeUndefined();
    expect(s.headers['x-csrf-token']).toBe('abc');
    expect(s.headers['x-forwarded-host']).toBe(u.host);
  });

  it('forwards GETs of the bare path and below, and nothing outside /temporal', async () => {
    expect((await fetch(`${base}/temporal`)).status).toBe(201);
    expect(seen.at(-1)!.url).toBe('/temporal');
    expect((await fetch(`${base}/temporal/_app/x.js`)).status).toBe(201);
    expect(seen.at(-1)!.url).toBe('/temporal/_app/x.js');
    const before = seen.length;
    expect((await fetch(`${base}/temporalx`)).status).toBe(404);
    expect(seen.length).toBe(before);
  });

  it('answers 502 when the UI does not answer', async () => {
    const res = await fetch(`${deadBase}/temporal/`);
    expect(res.status).toBe(502);
    expect(await res.text()).toMatch(/Temporal UI did not answer/);
  });
});
