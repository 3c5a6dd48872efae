/**
 * Red-team L8: the HTTP front had no connection cap and idle sockets lived 60-100 s. Now a socket that sends
 * nothing is closed after HTTP_HEADERS_TIMEOUT_MS, a kept-alive one after HTTP_KEEP_ALIVE_TIMEOUT_MS idle, and
 * connections past HTTP_MAX_CONNECTIONS are closed at accept.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

async function listening(env: Record<string, string>): Promise<{ port: number }> {
  const f = await startTestFront(env);
  fronts.push(f);
  await f.app.listen({ host: '127.0.0.1', port: 0 });
  return { port: (f.app.server.address() as AddressInfo).port };
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // Flowing, so the client sees the server's close (a paused socket never reads the FIN).
    const s = net.connect(port, '127.0.0.1', () => resolve(s.resume()));
    s.on('error', () => {});
    s.once('error', reject);
    sockets.push(s);
  });
}

const closed = (s: net.Socket): Promise<number> => {
  const t0 = Date.now();
  return new Promise((resolve) => (s.destroyed && s.readyState === 'closed' ? resolve(0) : s.once('close', () => resolve(Date.now() - t0))));
};

describe('HTTP front connections', () => {
  it('defaults: headers within 10 s, keep-alive idle 5 s, a cap on connections', () => {
    const c = loadConfig({});
    expect(c.HTTP_HEADERS_TIMEOUT_MS).toBeLessThanOrEqual(10_000);
    expect(c.HTTP_KEEP_ALIVE_TIMEOUT_MS).toBeLessThanOrEqual(5_000);
    expect(c.HTTP_MAX_CONNECTIONS).toBeGreaterThan(0);
  });

  it('the server applies them', async () => {
    const f = await startTestFront({ HTTP_HEADERS_TIMEOUT_MS: '700', HTTP_KEEP_ALIVE_TIMEOUT_MS: '300', HTTP_MAX_CONNECTIONS: '7' });
    fronts.push(f);
    expect(f.app.server.headersTimeout).toBe(700);
    expect(f.app.server.keepAliveTimeout).toBe(300);
    // Node's own cap is the descriptor bound, twice the fair cap (connections.ts).
    expect(f.app.server.maxConnections).toBe(14);
  });

  it('a socket that sends nothing, or only part of its headers, is closed with a 408', async () => {
    const { port } = await listening({ HTTP_HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '60000' });
    const silent = await connect(port);
    const partial = await connect(port);
    partial.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    let answer = '';
    partial.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    await Promise.all([closed(silent), closed(partial)]);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a kept-alive connection is closed once idle', async () => {
    const { port } = await listening({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '300' });
    const s = await connect(port);
    let answer = '';
    const gotAnswer = new Promise<void>((resolve) =>
      s.on('data', (d: Buffer) => {
        answer += d.toString('latin1');
        if (/\r\n\r\n[\s\S]*\}/.test(answer)) resolve();
      }),
    );
    s.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    await gotAnswer;
    expect(answer).toMatch(/^HTTP\/1\.1 \d{3}/);
    expect(answer).toMatch(/keep-alive/i);
    await closed(s);
  });

  it('issue 27 M1: at the cap a newcomer that sends a request takes the place of the longest-idle connection; one that sends nothing is closed', async () => {
    const { port } = await listening({ HTTP_MAX_CONNECTIONS: '3', HTTP_HEADERS_TIMEOUT_MS: '60000', REQUEST_TIMEOUT_MS: '60000' });
    const held = [await connect(port), await connect(port), await connect(port)];
    const silent = await connect(port);
    await closed(silent);
    expect(held.every((s) => !s.destroyed)).toBe(true);
    const extra = await connect(port);
    let answer = '';
    const got = new Promise<void>((resolve) => extra.on('data', (d: Buffer) => ((answer += d.toString('latin1')), resolve())));
    extra.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    await got;
    expect(answer).toMatch(/^HTTP\/1\.1 \d{3}/);
    // The oldest idle one made room for it.
    await closed(held[0]!);
    expect(held.slice(1).every((s) => !s.destroyed)).toBe(true);
  });
});
