/**
 * Where a `start` process's idle memory goes: RSS (and V8 heap / external) after each piece the service
 * builds, in the order services.ts builds them, against a fresh dev server and one fake ComfyUI:
 *
 *   npx tsx bench/idle-memory.ts [--backends 1]
 *
 * Figures are this process's: tsx's loader and the fake ComfyUI (started first) are in the baseline.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.ts';
import { createLogger } from '../src/log.ts';
import { startFakeComfyUI } from '../tools/fake-comfyui/server.ts';
import { freePort } from '../test/support/ports.ts';
import { startTestTemporal } from '../test/support/temporal.ts';

const { values } = parseArgs({ options: { backends: { type: 'string', default: '1' } } });
const n = Number(values.backends);
const rows: Array<[string, NodeJS.MemoryUsage]> = [];
const gc = (globalThis as { gc?: () => void }).gc;
const mark = async (what: string): Promise<void> => {
  await new Promise((r) => setTimeout(r, 500));
  gc?.();
  rows.push([what, process.memoryUsage()]);
};

const temporal = await startTestTemporal();
const fakes = await Promise.all(Array.from({ length: n }, () => startFakeComfyUI({ port: 0, stepMs: 0, renderMs: 0, logLevel: 'silent' })));
await mark('node + tsx + fake ComfyUI (baseline)');
const { runServices } = await import('../src/app/services.ts');
await mark('service modules imported');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cd-idle-mem-'));
const config = loadConfig({
  ...process.env,
  TEMPORAL_ADDRESS: temporal.address,
  COMFYUI_URL: fakes.map((f) => f.url).join(','),
  DATA_DIR: dataDir,
  PORT: String(await freePort()),
  TEMPORAL_TASK_QUEUE: 'idle-mem',
  LOG_LEVEL: 'warn',
});
// Workers in this process: the rows are this process's memory (npm start runs them in a second process).
const running = await runServices('start', config, createLogger('warn', 'idle-mem'), { workersInProcess: true });
await mark('services running (workers + front), idle');
// The first render creates the workflow sandbox (the bundle in a V8 context) and the ComfyUI clients' state.
for (let i = 0; i < 3; i++) {
  const res = await fetch(`${running.apiUrl}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'idle memory', model: 'imagegen-flux-schnell', width: 64, height: 64, seed: i }),
  });
  if (res.status !== 200) throw new Error(`render failed: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}
await mark('after 3 renders');
await new Promise((r) => setTimeout(r, 3_000));
await mark('idle 3 s later');

const MB = (b: number): string => `${(b / 1024 / 1024).toFixed(0).padStart(5)} MB`;
process.stdout.write(`${'after'.padEnd(44)}  ${'rss'.padStart(8)}  ${'heapUsed'.padStart(8)}  ${'external'.padStart(8)}  ${'Δrss'.padStart(8)}\n`);
let prev = rows[0]![1].rss;
for (const [what, m] of rows) {
  process.stdout.write(`${what.padEnd(44)}  ${MB(m.rss)}  ${MB(m.heapUsed)}  ${MB(m.external)}  ${MB(m.rss - prev)}\n`);
  prev = m.rss;
}
await running.stop();
await Promise.all(fakes.map((f) => f.close()));
await temporal.stop();
process.exit(0);
