/**
 * `closeSilentSockets` (src/fair/connections.ts): a socket that connects and sends nothing is closed after the
 * given time; one that has sent part of its headers is left to Node's headers timeout, whose 408 it would
 * otherwise race (test/unit/http-connections.test.ts saw the answer lost under load).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeSilentSockets } from '../../src/fair/connections.ts';

const open: Array<{ close(): void }> = [];
afterEach(() => {
  for (const o of open.splice(0)) o.close();
});

async function server(afterMs: number): Promise<number> {
  // Node's own headers timeout far away: only closeSilentSockets can close a socket within the test.
  const s = http.createServer({ headersTimeout: 60_000, requestTimeout: 60_000 }, (_req, res) => res.end('ok'));
  closeSilentSockets(s, afterMs);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  open.push({ close: () => s.close() });
  return (s.address() as AddressInfo).port;
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const c = net.connect(port, '127.0.0.1', () => resolve(c.resume()));
    c.once('error', reject);
    open.push({ close: () => c.destroy() });
  });
}

describe('closeSilentSockets', () => {
  it('closes a socket that sent nothing; leaves one that sent part of its headers to the headers timeout', async () => {
    const port = await server(150);
    // Connected first: its timer fires before the silent one's, so it has fired once the silent one is closed.
    const partial = await connect(port);
    partial.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const silent = await connect(port);
    await new Promise((r) => silent.once('close', r));
    expect(partial.destroyed).toBe(false);
    // Still served: the rest of its headers gets an answer.
    const answer = new Promise<string>((resolve) => partial.once('data', (d: Buffer) => resolve(d.toString('latin1'))));
    partial.write('\r\n');
    expect(await answer).toMatch(/^HTTP\/1\.1 200/);
  });
});
