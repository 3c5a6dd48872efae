/**
 * Fault suite, webhooks across a restart: front (`api`) and worker as separate processes, a receiver on
 * 127.0.0.1 (listed in WEBHOOK_ALLOWED_TARGETS explicitly: loopback is refused otherwise). A video render ends
 * while the receiver refuses its webhook; the whole stack is SIGKILLed between the render's end and a successful
 * delivery, the receiver starts accepting, the stack comes back, and the event arrives: the same `webhook-id` on
 * every try, the same body, a signature the standardwebhooks library verifies, and operators see it delivered.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';
import { scenario, waitFor } from './helpers.ts';

interface Try {
  headers: http.IncomingHttpHeaders;
  body: string;
  answered: number;
}

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let temporal: TestTemporal;
let fake: FakeComfyUI;
let worker: TestService;
let front: TestService;
let receiver: http.Server;
let receiverUrl: string;
let accepting = false;
const tries: Try[] = [];

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answered = accepting ? 200 : 503;
      tries.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), answered });
      res.writeHead(answered).end(accepting ? 'thanks' : 'not now');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/comfy`;

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-faults-webhook-'));
  const taskQueue = `renders-webhook-${Date.now().toString(36)}`;
  [temporal, fake] = await Promise.all([
    startTestTemporal(),
    startFakeComfyUI({ port: 0, dataDir: path.join(dataDir, 'comfyui'), stepMs: 20, logLevel: 'silent' }),
  ]);
  const env = {
    HEARTBEAT_TIMEOUT_MS: '4000',
    POLL_INTERVAL_MS: '200',
    SHUTDOWN_GRACE_MS: '1000',
    WEBHOOK_SECRET: SECRET,
    // Loopback is internal: the receiver's address has to be listed, as any internal address would.
    WEBHOOK_ALLOWED_TARGETS: '127.0.0.1',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_RETRY_INITIAL_MS: '300',
    WEBHOOK_RETRY_MAX_MS: '1000',
    WEBHOOK_MAX_ATTEMPTS: '100',
  };
  const common = { temporalAddress: temporal.address, comfyUrl: fake.url, dataDir, taskQueue };
  [worker, front] = await Promise.all([startService({ ...common, mode: 'worker', env }), startService({ ...common, mode: 'api', env })]);
}, 400_000);

afterAll(async () => {
  await Promise.all([front?.kill('SIGKILL'), worker?.kill('SIGKILL')]);
  await fake?.close();
  await temporal?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

const video = (extra: Record<string, unknown>) =>
  fetch(`${front.url}/v1/videos`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'videogen-minimax-h3',
      prompt: 'a webhook across a restart',
      size: '192x128',
      num_frames: 22,
      num_inference_steps: 2,
      seed: 5,
      ...extra,
    }),
  });

async function webhookOf(renderId: string): Promise<Record<string, unknown> | undefined> {
  const res = await fetch(`${front.url}/renders/${renderId}`);
  return ((await res.json()) as { webhook?: Record<string, unknown> }).webhook;
}

describe('webhooks across restarts', () => {
  scenario(
    'stack SIGKILLed after the render ended, before the webhook got through: delivered after the restart, same webhook-id, signature verifies',
    async () => {
      const res = await video({ webhook_url: receiverUrl });
      const job = (await res.json()) as { id: string; status: string };
      expect(res.status, JSON.stringify(job)).toBe(200);
      const renderId = job.id;

      // The receiver refuses: tries come (so the render has ended) and fail.
      await waitFor('two refused tries', () => tries.filter((t) => t.answered === 503).length >= 2, 60_000);
      const done = (await (await fetch(`${front.url}/v1/videos/${renderId}`)).json()) as { status: string };
      expect(done.status).toBe('completed');
      const failing = await webhookOf(renderId);
      expect(failing).toMatchObject({ state: 'failing', lastStatus: 503, url: receiverUrl, type: 'video.completed' });

      // The whole stack goes down between the render's end and a delivery that worked.
      await Promise.all([worker.kill('SIGKILL'), front.kill('SIGKILL')]);
      const triesBeforeRestart = tries.length;
      accepting = true;
      await Promise.all([worker.restart(), front.restart()]);

      const delivered = await waitFor('the webhook delivered after the restart', () => tries.find((t) => t.answered === 200), 60_000);
      expect(tries.length).toBeGreaterThan(triesBeforeRestart);
      const ids = new Set(tries.map((t) => t.headers['webhook-id']));
      expect(ids.size).toBe(1);
      expect(new Set(tries.map((t) => t.body)).size).toBe(1);
      expect(new Set(tries.map((t) => t.headers['webhook-timestamp'])).size).toBeGreaterThan(1);

      const event = new Webhook(SECRET).verify(delivered.body, delivered.headers as Record<string, string>) as {
        type: string;
        data: { id: string; status: string; outputs: Array<{ mime: string; url: string }> };
      };
      expect(event.type).toBe('video.completed');
      expect(event.data).toMatchObject({ id: renderId, status: 'completed' });
      expect(event.data.outputs).toEqual([expect.objectContaining({ mime: 'video/mp4', url: `/renders/${renderId}/outputs/0` })]);
      // Bytes never travel in the event: ids and links only.
      expect(delivered.body.length).toBeLessThan(2_000);

      const view = await waitFor('operators to see the delivery', async () => {
        const w = await webhookOf(renderId);
        return w?.state === 'delivered' ? w : undefined;
      });
      expect(view).toMatchObject({ webhookId: [...ids][0], lastStatus: 200, attempts: tries.length });
      process.stdout.write(`webhook: ${tries.length} tries (${tries.filter((t) => t.answered === 503).length} refused), id ${String([...ids][0])}\n`);
    },
    240_000,
  );

  scenario('a webhook_url the allow-list refuses is a 400 naming the field, and nothing starts', async () => {
    const before = tries.length;
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.2]/x', 'http://2130706434/x', 'https://hooks.example.com/x']) {
      const res = await video({ webhook_url: url, seed: 6 });
      const body = (await res.json()) as { error: { param: string; message: string } };
      expect(res.status, url).toBe(400);
      expect(body.error.param).toBe('webhook_url');
      expect(body.error.message).toMatch(/webhook_url: .*(link-local|loopback|not in WEBHOOK_ALLOWED_TARGETS)/);
    }
    const list = (await (await fetch(`${front.url}/v1/videos?limit=100`)).json()) as { data: unknown[] };
    expect(list.data).toHaveLength(1);
    expect(tries.length).toBe(before);
  });
});
