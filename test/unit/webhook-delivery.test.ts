/**
 * One webhook try (`deliverWebhook`, src/activities/deliver-webhook.ts over src/webhooks/post.ts), against
 * receivers on 127.0.0.1 (listed explicitly in the allow-list, as internal addresses must be), in Temporal's
 * MockActivityEnvironment: a 2xx is the result and its signature verifies with the standardwebhooks library;
 * other answers, redirects (not followed), silence (the timeout) and refused addresses fail the try with the
 * type the workflow reads; the answer is read only up to its bound; the connection goes to the checked address.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeliverWebhook } from '../../src/activities/deliver-webhook.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/log.ts';
import { MAX_RESPONSE_BYTES } from '../../src/webhooks/post.ts';
import type { DeliverWebhookInput } from '../../src/contracts/webhooks.ts';

// The environment logs every failed try at WARN, which most of these cause on purpose.
const mockEnv = () => new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') });

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const received: Received[] = [];
let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.writeHead(204).end();
let server: http.Server;
let base: string;
let port: number;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const config = (allowed = '127.0.0.1,hooks.test') => loadConfig({ WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_TARGETS: allowed });
const logger = createLogger('silent');
const body = JSON.stringify({ object: 'event', id: 'evt_1', type: 'video.completed', data: { id: 'render-1' } });
const input = (over: Partial<DeliverWebhookInput> = {}): DeliverWebhookInput => ({
  renderId: 'render-1',
  webhookId: 'msg_1',
  url: `${base}/hook`,
  body,
  attempt: 1,
  timeoutMs: 2_000,
  ...over,
});

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('deliverWebhook', () => {
  it('posts the body with the three Standard Webhooks headers; the signature verifies', async () => {
    received.length = 0;
    answer = (_req, res) => res.writeHead(200).end('ok');
    const result = await mockEnv().run(createDeliverWebhook({ config: config(), logger }), input());
    expect(result).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(received).toHaveLength(1);
    const r = received[0]!;
    expect(r.path).toBe('/hook');
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['webhook-id']).toBe('msg_1');
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    expect(r.body).toBe(body);
    const verified = new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    expect(verified).toEqual(JSON.parse(body));
  });

  it('a non-2xx answer fails the try as WebhookRejected with the status (retried by the workflow)', async () => {
    answer = (_req, res) => res.writeHead(503).end('busy');
    const f = await failureOf(mockEnv().run(createDeliverWebhook({ config: config(), logger }), input()));
    expect(f.type).toBe('WebhookRejected');
    expect(f.nonRetryable).toBe(false);
    expect(f.details?.[0]).toMatchObject({ status: 503, response: 'busy' });
  });

  it('a redirect is not followed', async () => {
    received.length = 0;
    answer = (req, res) => {
      if (req.url === '/hook') res.writeHead(302, { location: `${base}/elsewhere` }).end();
      else res.writeHead(200).end();
    };
    const f = await failureOf(mockEnv().run(createDeliverWebhook({ config: config(), logger }), input()));
    expect(f.message).toMatch(/answered 302 \(redirects are not followed\)/);
    expect(received.map((r) => r.path)).toEqual(['/hook']);
  });

  it('a receiver that never answers: WebhookUnreachable after the timeout', async () => {
    answer = () => undefined;
    const t0 = Date.now();
    const f = await failureOf(mockEnv().run(createDeliverWebhook({ config: config(), logger }), input({ timeoutMs: 300 })));
    expect(f.type).toBe('WebhookUnreachable');
    expect(f.message).toMatch(/within 300 ms/);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('an endless answer is read only up to its bound', async () => {
    let written = 0;
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 97);
      const pump = (): void => {
        while (written < 64 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
        if (written < 64 * 1024 * 1024) res.once('drain', pump);
        else res.end();
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
    };
    const result = await mockEnv().run(createDeliverWebhook({ config: config(), logger }), input());
    expect(result).toMatchObject({ status: 200 });
    // The socket is closed after the first few KiB: the 64 MB never get through.
    expect(written).toBeLessThan(16 * 1024 * 1024);
    expect(MAX_RESPONSE_BYTES).toBeLessThanOrEqual(4096);
  });

  it('a listed name is connected to at the address checked, never resolved again (DNS rebinding)', async () => {
    received.length = 0;
    answer = (_req, res) => res.writeHead(202).end();
    let lookups = 0;
    const resolve = async (host: string) => {
      lookups++;
      expect(host).toBe('hooks.test');
      return ['127.0.0.1'];
    };
    const deliver = createDeliverWebhook({ config: config(), logger }, { resolve });
    const result = await mockEnv().run(deliver, input({ url: `http://hooks.test:${port}/named` }));
    expect(result).toMatchObject({ status: 202, address: '127.0.0.1' });
    expect(lookups).toBe(1);
    expect(received[0]).toMatchObject({ path: '/named', headers: expect.objectContaining({ host: `hooks.test:${port}` }) });
  });

  it.each([
    [['169.254.169.254'], /169\.254\.169\.254 is a link-local/],
    [['::ffff:169.254.169.254'], /link-local/],
    [['93.184.216.34', '10.0.0.7'], /10\.0\.0\.7 is a private/],
    [['::1'], /::1 is a loopback/],
  ])('a listed name resolving to %j is refused, never retried, nothing sent', async (addresses, why) => {
    received.length = 0;
    const deliver = createDeliverWebhook({ config: config('hooks.test'), logger }, { resolve: async () => addresses });
    const f = await failureOf(mockEnv().run(deliver, input({ url: `http://hooks.test:${port}/x` })));
    expect(f.type).toBe('WebhookRefused');
    expect(f.nonRetryable).toBe(true);
    expect(f.message).toMatch(why);
    expect(received).toHaveLength(0);
  });

  it('a target taken off the allow-list since the submission is refused at delivery', async () => {
    received.length = 0;
    const f = await failureOf(mockEnv().run(createDeliverWebhook({ config: config('hooks.test'), logger }), input()));
    expect(f.type).toBe('WebhookRefused');
    expect(f.message).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(received).toHaveLength(0);
  });

  it('without a secret the worker cannot sign: WebhookNotConfigured, retried (a fixed deployment delivers)', async () => {
    const f = await failureOf(mockEnv().run(createDeliverWebhook({ config: loadConfig({}), logger }), input()));
    expect(f.type).toBe('WebhookNotConfigured');
    expect(f.nonRetryable).toBe(false);
  });
});
