/**
 * Records real `render` workflow histories for the replay test (test/unit/replay.test.ts):
 *
 *   npx tsx test/histories/record.ts [scenario...]
 *
 * Starts the real stack (Temporal dev server, fake ComfyUI, comfy-durable as a child process), runs one
 * render per scenario and writes `test/histories/<scenario>.json` (`historyToJSON` of `fetchHistory()`).
 * Re-record after every intended workflow change; a change that makes an old history fail to replay must
 * follow docs/versioning.md (before 1.0: one shape, re-record; after: behind a patch, old histories kept).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { startFakeComfyUI, type FakeComfyUI } from '../../tools/fake-comfyui/server.ts';
import type { FaultsBody } from '../../tools/fake-comfyui/faults.ts';
import { startService, type TestService } from '../support/service.ts';
import { startTestTemporal, type TestTemporal } from '../support/temporal.ts';

/** Where the JSON files go: this directory, or HISTORIES_DIR (to look at a recording without replacing these). */
const outDir = process.env.HISTORIES_DIR ?? path.dirname(fileURLToPath(import.meta.url));

interface Scenario {
  name: string;
  /** Expected final status, checked so a broken scenario never records a misleading history. */
  status: 'COMPLETED' | 'FAILED' | 'CANCELLED';
  faults?: FaultsBody;
  body: Record<string, unknown>;
  /** Cancel the render once its prompt is running on ComfyUI. */
  cancel?: boolean;
  /** Ask for a webhook (X-Webhook-URL) to the recorder's receiver: the render starts its `webhook` child when it ends. */
  webhook?: boolean;
}

const base = { model: 'imagegen-flux-schnell', width: 128, height: 128 };

const SCENARIOS: Scenario[] = [
  { name: 'success', status: 'COMPLETED', body: { ...base, prompt: 'a lighthouse at dusk', seed: 1 } },
  // The first prompt hangs inside a node; the service's short STALL_TIMEOUT_MS makes runPrompt give up,
  // interrupt it, and the retry (attempt 2) renders.
  { name: 'stall-retry', status: 'COMPLETED', faults: { hang: { count: 1 } }, body: { ...base, prompt: 'stall then retry', seed: 2 } },
  // A node raises: ComfyExecution is non-retryable, so the render fails on its first attempt.
  {
    name: 'failure',
    status: 'FAILED',
    faults: { executionError: { type: 'exception', count: 1, message: 'recorded failure' } },
    body: { ...base, prompt: 'this one fails', seed: 3 },
  },
  { name: 'cancel', status: 'CANCELLED', faults: { slow: { stepMs: 1_000 } }, body: { ...base, prompt: 'cancel me', seed: 4 }, cancel: true },
  // Since the patch `webhook-delivery` (docs/versioning.md): renders with a webhook, ending either way.
  { name: 'webhook-success', status: 'COMPLETED', body: { ...base, prompt: 'tell me when done', seed: 5 }, webhook: true },
  {
    name: 'webhook-failure',
    status: 'FAILED',
    faults: { executionError: { type: 'exception', count: 1, message: 'recorded failure' } },
    body: { ...base, prompt: 'tell me it failed', seed: 6 },
    webhook: true,
  },
];

async function setFaults(fake: FakeComfyUI, faults: FaultsBody): Promise<void> {
  const res = await fetch(`${fake.url}/__fake/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(faults) });
  if (!res.ok) throw new Error(`setting faults failed: ${res.status} ${await res.text()}`);
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function runScenario(s: Scenario, svc: TestService, fake: FakeComfyUI, client: Client, webhookUrl: string): Promise<void> {
  await fetch(`${fake.url}/__fake/reset`, { method: 'POST' });
  if (s.faults) await setFaults(fake, s.faults);
  // The A1111 route answers only when the render ends: start it, then find the workflow it started.
  const headers = { 'content-type': 'application/json', ...(s.webhook ? { 'x-webhook-url': webhookUrl } : {}) };
  const response = fetch(`${svc.url}/sdapi/v1/txt2img`, { method: 'POST', headers, body: JSON.stringify(s.body) })
    .then((r) => r.status)
    .catch(() => 0);
  const workflowId = await waitFor('the render to start', async () => {
    for await (const wf of client.workflow.list({ query: `WorkflowType='render' AND TaskQueue='${svc.taskQueue}' AND ExecutionStatus='Running'` })) return wf.workflowId;
    return undefined;
  });
  const handle: WorkflowHandle = client.workflow.getHandle(workflowId);
  if (s.cancel) {
    await waitFor('runPrompt to be running', async () => {
      const d = await handle.describe();
      return d.raw.pendingActivities?.some((a) => a.activityType?.name === 'runPrompt' && a.heartbeatDetails) ? true : undefined;
    });
    await handle.cancel();
  }
  const status = await response;
  const described = await waitFor('the render to close', async () => {
    const d = await handle.describe();
    return d.status.name === 'RUNNING' ? undefined : d;
  });
  if (described.status.name !== s.status) throw new Error(`${s.name}: expected ${s.status}, got ${described.status.name} (HTTP ${status})`);
  const history = await handle.fetchHistory();
  const file = path.join(outDir, `${s.name}.json`);
  writeFileSync(file, `${historyToJSON(history)}\n`);
  process.stdout.write(`${s.name}: ${workflowId} ${described.status.name}, ${history.events?.length ?? 0} events -> ${path.relative(process.cwd(), file)}\n`);
}

async function main(): Promise<void> {
  let temporal: TestTemporal | undefined;
  let fake: FakeComfyUI | undefined;
  let svc: TestService | undefined;
  let client: Client | undefined;
  // The webhook scenarios' receiver: accepts every event (its history is the render's, not the delivery's).
  const receiver = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  try {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    temporal = await startTestTemporal();
    fake = await startFakeComfyUI({ port: 0, dataDir: mkdtempSync(path.join(os.tmpdir(), 'cd-fake-')) });
    const env = {
      STALL_TIMEOUT_MS: '1500',
      HEARTBEAT_TIMEOUT_MS: '3000',
      WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
      WEBHOOK_ALLOWED_TARGETS: '127.0.0.1',
    };
    svc = await startService({ temporalAddress: temporal.address, comfyUrl: fake.url, env });
    client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
    const only = process.argv.slice(2);
    for (const s of SCENARIOS) if (only.length === 0 || only.includes(s.name)) await runScenario(s, svc, fake, client, webhookUrl);
  } finally {
    receiver.close();
    await svc?.kill('SIGKILL');
    await fake?.close();
    await client?.connection.close();
    await temporal?.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
