/**
 * src/comfyui/transport.ts on node's HTTP client, against a local server that misbehaves on purpose: a kept-alive
 * connection the server drops as the next request arrives, a body that stops half-way, a caller slower than the
 * body, and a multipart upload read back by the web-standard parser (what the fake ComfyUI uses; aiohttp's is
 * checked on a real ComfyUI, bench/README.md issue 25 sixth pass).
 */
import http from 'node:http';
import { once } from 'node:events';
import { openAsBlob } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ComfyUnavailableError } from '../../src/comfyui/errors.ts';
import { MultipartForm } from '../../src/comfyui/multipart.ts';
import { HttpTransport, noopLogger } from '../../src/comfyui/transport.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, nth: number) => void;

const servers: http.Server[] = [];

async function serve(handler: Handler): Promise<URL> {
  let nth = 0;
  const server = http.createServer((req, res) => handler(req, res, ++nth));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

function transport(url: URL, requestMs = 5_000): HttpTransport {
  return new HttpTransport({ url, logger: noopLogger, requestMs, connections: 2 });
}

afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('ComfyUI HTTP transport (node:http)', () => {
  it('a GET on a kept-alive connection the server drops as it arrives is sent again on a new one', async () => {
    const sockets = new Set<Socket>();
    const url = await serve((req, res, nth) => {
      sockets.add(req.socket);
      // The second request arrives on the first one's connection: the server closes it without an answer.
      if (nth === 2) return req.socket.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ nth }));
    });
    const t = transport(url);
    expect(JSON.parse((await t.call('GET', '/queue')).body.toString())).toEqual({ nth: 1 });
    const again = await t.call('GET', '/queue');
    expect(JSON.parse(again.body.toString())).toEqual({ nth: 3 });
    expect(sockets.size).toBe(2);
    await t.close();
  });

  it('a POST on such a connection is not sent twice: the caller decides (prompt ids make it safe to)', async () => {
    let posts = 0;
    const url = await serve((req, res, nth) => {
      if (req.method === 'POST') posts++;
      if (nth === 2) return req.socket.destroy();
      res.end('{}');
    });
    const t = transport(url);
    await t.call('GET', '/queue');
    await expect(t.call('POST', '/prompt', { json: { prompt: {} } })).rejects.toBeInstanceOf(ComfyUnavailableError);
    expect(posts).toBe(1);
    await t.close();
  });

  it('a streamed body that stops sending ends with ComfyUnavailableError after the gap timeout', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4' });
      res.write(Buffer.alloc(1024, 1));
      // ...and nothing more.
    });
    const t = transport(url, 300);
    const { body } = await t.stream('/view', { query: { filename: 'a.mp4' } });
    let got = 0;
    const read = (async () => {
      for await (const chunk of body) got += chunk.length;
    })();
    await expect(read).rejects.toThrow(/no data for 300 ms/);
    expect(got).toBe(1024);
    await t.close();
  });

  it('a caller slower than the gap timeout is not taken for a server that stopped', async () => {
    const size = 4 * 1024 * 1024;
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': size });
      res.end(Buffer.alloc(size, 7));
    });
    const t = transport(url, 400);
    const { body } = await t.stream('/view');
    let got = 0;
    for await (const chunk of body) {
      got += chunk.length;
      // Paused for three timeouts while unread data waits.
      if (got === chunk.length) await new Promise((r) => setTimeout(r, 1_200));
    }
    expect(got).toBe(size);
    await t.close();
  });

  it('streamed bodies read to their end, one after another on a kept-alive connection', async () => {
    const url = await serve((_req, res, nth) => {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': 3 });
      res.end(Buffer.from([nth, nth, nth]));
    });
    const t = transport(url, 1_000);
    for (let i = 1; i <= 3; i++) {
      const { body } = await t.stream('/view');
      const got: number[] = [];
      for await (const chunk of body) {
        got.push(...chunk);
        // The response ends (and its connection goes back to the pool) while the caller is busy.
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(got).toEqual([i, i, i]);
    }
    await t.close();
  });

  it('a multipart upload carries its length, text fields and a file-backed Blob as the web parser reads them', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'transport-'));
    try {
      const file = path.join(dir, 'in.png');
      const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
      await writeFile(file, bytes);
      let seen: Record<string, unknown> = {};
      const url = await serve((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          void new Request('http://x/', { method: 'POST', headers: { 'content-type': String(req.headers['content-type']) }, body })
            .formData()
            .then(async (form) => {
              const image = form.get('image') as File;
              seen = {
                length: Number(req.headers['content-length']),
                received: body.length,
                name: image.name,
                type: image.type,
                same: Buffer.from(await image.arrayBuffer()).equals(bytes),
                subfolder: form.get('subfolder'),
                quoted: form.get('a "quoted" name'),
              };
              res.end('{}');
            });
        });
      });
      const form = new MultipartForm();
      form.append('image', await openAsBlob(file, { type: 'image/png' }), 'in "1".png');
      form.append('subfolder', 'ünï/cöde');
      form.append('a "quoted" name', 'yes');
      const t = transport(url);
      expect((await t.call('POST', '/upload/image', { form })).status).toBe(200);
      expect(seen).toEqual({
        length: form.length,
        received: form.length,
        name: 'in "1".png',
        type: 'image/png',
        same: true,
        subfolder: 'ünï/cöde',
        quoted: 'yes',
      });
      await t.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a refused connection is ComfyUnavailableError with `refused` set', async () => {
    const url = await serve(() => undefined);
    const s = servers.pop()!;
    await new Promise((r) => s.close(r));
    const t = transport(url);
    const err = await t.call('GET', '/queue').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComfyUnavailableError);
    expect((err as ComfyUnavailableError).refused).toBe(true);
    await t.close();
  });

  it('an answer larger than maxBytes fails the call instead of being held; a smaller one is read whole', async () => {
    const url = await serve((req, res) => res.end(Buffer.alloc(req.url === '/big' ? 300_000 : 1_000, 120)));
    const t = transport(url);
    const err = await t.call('GET', '/big', { maxBytes: 100_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ComfyUnavailableError);
    expect((err as Error).message).toMatch(/larger than 100000 bytes/);
    expect((await t.call('GET', '/small', { maxBytes: 100_000 })).body.length).toBe(1_000);
    await t.close();
  });
});
