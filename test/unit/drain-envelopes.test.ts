/**
 * Issue 27 L3: a draining front (SIGTERM → `app.close()`) answered Fastify's bare 503
 * `{"error":"Service Unavailable","message":…,"statusCode":503}` without Retry-After, and Node's own 408 / 431
 * came outside every envelope too. Now each is in its route family's envelope; the drain's 503 says when to
 * come back and closes the connection.
 *
 * A request can reach a draining front only on a connection that is busy (idle ones are closed): each socket
 * holds a render, the front starts closing, and a second request is pipelined behind the held one.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RenderFailedError } from '../../src/renders/render-service.ts';
import type { RenderResult } from '../../src/contracts/render.ts';
import { startTestFront, type TestFront } from '../support/front.ts';

const fronts: TestFront[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

async function listeningFront(env: Record<string, string> = {}): Promise<{ front: TestFront; port: number }> {
  const front = await startTestFront(env);
  fronts.push(front);
  await front.app.listen({ host: '127.0.0.1', port: 0 });
  return { front, port: (front.app.server.address() as AddressInfo).port };
}

/** A socket and everything it receives, resolved once the server closes it. */
function rawSocket(port: number): Promise<{ socket: net.Socket; received: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    const received = new Promise<string>((done) => socket.once('close', () => done(text)));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, received }));
    socket.once('error', reject);
  });
}

interface Answer {
  status: number;
  headers: string;
  body: Record<string, unknown>;
}

/** The last HTTP answer in a socket's bytes (the ones before it answered earlier requests). */
function lastAnswer(text: string): Answer {
  const start = text.lastIndexOf('HTTP/1.1 ');
  expect(start).toBeGreaterThanOrEqual(0);
  const [head, body] = text.slice(start).split('\r\n\r\n', 2) as [string, string];
  return { status: Number(head.slice(9, 12)), headers: head, body: JSON.parse(body) as Record<string, unknown> };
}

const heldRender =
  'POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 47\r\n\r\n{"prompt":"a cat","width":64,"height":64,"n":1}';
const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;

describe('issue 27 L3: refusals made outside the routes keep their envelope', () => {
  it('a request arriving while the front drains gets a 503 with Retry-After in its family envelope', async () => {
    const { front, port } = await listeningFront();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    front.outcome = async (s): Promise<RenderResult> => {
      await released;
      throw new RenderFailedError(s.renderId, 503, 'ComfyUnavailable', 'held render released');
    };
    const probes = ['/sdapi/v1/options', '/v1/models', '/v1/videos', '/prompt'];
    const conns = await Promise.all(probes.map(() => rawSocket(port)));
    for (const c of conns) c.socket.write(heldRender);
    await vi.waitFor(() => expect(front.starts.length).toBe(probes.length));

    const closing = front.app.close();
    // Fastify's preClose (where the drain begins) runs before the listener closes.
    await vi.waitFor(() => expect(front.app.server.listening).toBe(false));
    probes.forEach((p, i) => conns[i]!.socket.write(get(p)));
    release();
    const answers = (await Promise.all(conns.map((c) => c.received))).map(lastAnswer);
    await closing;

    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(a.headers).toMatch(/\r\nretry-after: 5\r\n/i);
      expect(a.headers).toMatch(/\r\nconnection: close\r\n/i);
    }
    const [a1111, openai, video, comfy] = answers as [Answer, Answer, Answer, Answer];
    expect(a1111.body).toMatchObject({ error: 'HTTPException', detail: expect.stringMatching(/stopping/), body: '', errors: expect.any(String) });
    expect(openai.body.error).toMatchObject({ message: expect.stringMatching(/stopping/), type: 'server_error', code: 'service_unavailable' });
    expect(video.body).toMatchObject({ detail: expect.stringMatching(/stopping/), error: { type: 'server_error', code: 503 } });
    expect(comfy.body).toMatchObject({ error: { type: 'service_stopping', message: expect.stringMatching(/stopping/) }, node_errors: {} });
  });

  it("Node's 431 (headers too large) is in A1111's envelope and closes the connection", async () => {
    const { port } = await listeningFront();
    const { socket, received } = await rawSocket(port);
    socket.write(`GET /sdapi/v1/options HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const a = lastAnswer(await received);
    expect(a.status).toBe(431);
    expect(a.headers).toMatch(/\r\nconnection: close/i);
    expect(a.body).toMatchObject({ error: 'HTTPException', detail: 'the request headers are too large', field: 'headers', body: '', errors: '' });
  });

  it("Node's 408 (headers not received in time) is in A1111's envelope", async () => {
    const { port } = await listeningFront({ HTTP_HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '60000' });
    const { socket, received } = await rawSocket(port);
    socket.write('GET /sdapi/v1/options HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const a = lastAnswer(await received);
    expect(a.status).toBe(408);
    expect(a.body).toMatchObject({ error: 'HTTPException', detail: 'the request was not received in time' });
  });

  it("Node's 408 for a trickled body on /v1/* is in OpenAI's envelope", async () => {
    const { port } = await listeningFront({ HTTP_HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600' });
    const { socket, received } = await rawSocket(port);
    socket.write('POST /v1/images/generations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pro');
    const a = lastAnswer(await received);
    expect(a.status).toBe(408);
    expect(a.body.error).toMatchObject({ message: 'the request was not received in time', type: 'invalid_request_error' });
  });
});
