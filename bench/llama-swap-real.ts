/**
 * The GPU-sharing guarantees of docs/llama-swap.md, run through the REAL llama-swap (which CI cannot build): the
 * guide's own config (docs/llama-swap.example.yaml, only its macros and the LLM entry changed), the fake ComfyUI
 * and a dummy LLM in the exclusive group. Prints one line per check with the measured figures.
 *
 *   LLAMA_SWAP_BIN=/path/to/llama-swap npx tsx bench/llama-swap-real.ts [slow-body|refused|comfy-down|mix|sigterm ...]
 *
 * Build llama-swap from its source with a plain `go build` (docs/llama-swap-facts.md); loopback only.
 */
import { writeDummyLlm } from '../test/support/dummy-llm.ts';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { startFakeComfyUI, type FakeComfyUI } from '../tools/fake-comfyui/server.ts';
import { fakeStats, resetFake, waitFor } from '../test/faults/helpers.ts';
import { freePort } from '../test/support/ports.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.LLAMA_SWAP_BIN ?? '/work/ext/llama-swap/llama-swap';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'cd-ls-real-'));
const dataDir = path.join(tmp, 'data');
const SLICE_MS = Number(process.env.SLICE_MS ?? 8_000);
const GRACE_MS = Number(process.env.GRACE_MS ?? 5_000);
/** The secrets the guide puts in llama-swap's environment (never in its config, never printed). */
const SECRETS = { GPU_LEASE_TOKEN: 'real-run-lease-secret-0123456789', LLAMA_SWAP_API_KEY: 'sk-real-run-key', API_TOKEN: 'sk-real-run-key' };
const AUTH = { authorization: `Bearer ${SECRETS.LLAMA_SWAP_API_KEY}` };

interface Ports {
  ls: number;
  front: number;
  gpu: number;
  temporal: number;
  llm: number;
  comfy: number;
}

const say = (line: string): void => void process.stdout.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`);

function writeConfig(p: Ports, fakeUrl: string): string {
  interface ConfigEntry {
    env: string[];
    [k: string]: unknown;
  }
  const doc = parseYaml(readFileSync(path.join(root, 'docs', 'llama-swap.example.yaml'), 'utf8')) as {
    macros: Record<string, unknown>;
    models: Record<string, ConfigEntry>;
  };
  Object.assign(doc.macros, {
    comfy_durable: root,
    data_dir: dataDir,
    comfyui_url: fakeUrl,
    llama_swap: `http://127.0.0.1:${p.ls}`,
    front_port: p.front,
    gpu_port: p.gpu,
    temporal_port: p.temporal,
  });
  const llm = writeDummyLlm(tmp, 300);
  doc.models.llm = { env: [], cmd: `${process.execPath} ${llm} ${p.llm}`, proxy: `http://127.0.0.1:${p.llm}`, checkEndpoint: '/health', ttl: 600 };
  doc.models['comfy-gpu']!.env.push(`GPU_LEASE_SLICE_MS=${SLICE_MS}`, 'LOG_LEVEL=info');
  // LOOKAHEAD=0: first in, first out, as before the dispatch (for a same-sitting comparison).
  if (process.env.LOOKAHEAD) doc.models['comfy-gpu']!.env.push(`GPU_DISPATCH_LOOKAHEAD=${process.env.LOOKAHEAD}`);
  doc.models['comfy-gpu']!.env = doc.models['comfy-gpu']!.env.map((e: string) => (e.startsWith('SHUTDOWN_GRACE_MS=') ? `SHUTDOWN_GRACE_MS=${GRACE_MS}` : e));
  doc.models['imagegen-flux-dev']!.env.push('LOG_LEVEL=info', 'TEMPORAL_UI=false');
  const file = path.join(tmp, 'config.yaml');
  writeFileSync(file, stringifyYaml(doc));
  return file;
}

let lsProc: ChildProcess | undefined;
let lsLog = '';

async function startLlamaSwap(p: Ports, config: string): Promise<void> {
  lsProc = spawn(bin, ['-config', config, '-listen', `127.0.0.1:${p.ls}`], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...SECRETS } });
  lsProc.stdout!.on('data', (d: Buffer) => (lsLog += d.toString()));
  lsProc.stderr!.on('data', (d: Buffer) => (lsLog += d.toString()));
  await waitFor(
    'the front ready behind llama-swap',
    async () => (await fetch(`http://127.0.0.1:${p.ls}/upstream/imagegen-flux-dev/ready`, { headers: AUTH }).catch(() => undefined))?.ok,
    240_000,
    500,
  );
}

async function running(p: Ports): Promise<string[]> {
  const body = (await (await fetch(`http://127.0.0.1:${p.ls}/running`, { headers: AUTH })).json()) as { running: Array<{ model: string; state: string }> };
  return body.running.filter((r) => r.state === 'ready').map((r) => r.model);
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = Date.now();
  const value = await fn();
  return { ms: Date.now() - t, value };
}

const chat = (p: Ports): Promise<number> =>
  fetch(`http://127.0.0.1:${p.ls}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH },
    body: JSON.stringify({ model: 'llm', messages: [{ role: 'user', content: 'hi' }] }),
  }).then(async (r) => (await r.text(), r.status));

function txt2img(p: Ports, seed: number, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return fetch(`http://127.0.0.1:${p.ls}/sdapi/v1/txt2img`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...AUTH, ...headers },
    body: JSON.stringify({ model: 'imagegen-flux-schnell', prompt: 'a fox', steps: 2, width: 64, height: 64, seed, ...extra }),
  }).then(async (r) => ({ status: r.status, body: await r.text() }));
}

/**
 * The issue's attack: a body announced as 100000 bytes, trickled a byte a second to the readiness route. Sent
 * with the key (as a key holder could): without it llama-swap's apiKeys answer 401 before anything is started.
 */
async function slowBody(p: Ports): Promise<void> {
  const anon = await fetch(`http://127.0.0.1:${p.ls}/upstream/comfy-gpu/gpu/ready`);
  say(`slow-body: without the key llama-swap answers ${anon.status}; running ${JSON.stringify(await running(p))}`);
  const trickleMs = 30_000;
  const sock = net.connect(p.ls, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  const opened = Date.now();
  sock.on('error', () => undefined);
  sock.write(
    `POST /upstream/comfy-gpu/gpu/ready HTTP/1.1\r\nHost: 127.0.0.1:${p.ls}\r\nAuthorization: Bearer ${SECRETS.LLAMA_SWAP_API_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
  );
  const trickle = setInterval(() => sock.write(' '), 1_000);
  // The request starts the GPU entry; once it runs, ask for the LLM (which must evict it).
  await waitFor('comfy-gpu started for the trickled request', async () => (await running(p)).includes('comfy-gpu'), 240_000, 200);
  const readyAt = Date.now() - opened;
  await new Promise((r) => setTimeout(r, 1_000));
  const llm = await timed(() => chat(p));
  say(
    `slow-body: comfy-gpu ready ${readyAt} ms into a ${trickleMs / 1000} s trickle; an LLM request sent 1 s later: ${llm.value} in ${llm.ms} ms (swap included)`,
  );
  await new Promise((r) => setTimeout(r, Math.max(0, trickleMs - (Date.now() - opened))));
  clearInterval(trickle);
  sock.destroy();
}

/** A 400 through llama-swap while the LLM runs: the LLM stays, the GPU entry is not started. */
async function refused(p: Ports): Promise<void> {
  await chat(p);
  const before = await running(p);
  const bad = await txt2img(p, 1, { sampler_name: 'no such sampler' });
  const after = await running(p);
  say(`refused: txt2img with a bad sampler ${bad.status}; running before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`);
}

async function comfyDown(p: Ports, fake: FakeComfyUI): Promise<FakeComfyUI> {
  await fetch(`http://127.0.0.1:${p.ls}/api/models/unload/llm`, { method: 'POST', headers: AUTH });
  await fake.close();
  const render = txt2img(p, 7);
  await new Promise((r) => setTimeout(r, 3_000));
  const llm = await timed(() => chat(p));
  say(`comfy-down: ComfyUI stopped, a render sent, 3 s later an LLM request: ${llm.value} in ${llm.ms} ms; running ${JSON.stringify(await running(p))}`);
  const back = await startFakeComfyUI({ port: p.comfy, stepMs: 50 });
  const done = await timed(() => render);
  say(`comfy-down: ComfyUI back; the render answered ${done.value.status} ${done.ms} ms later`);
  return back;
}

async function mix(p: Ports, fake: FakeComfyUI, renders = 32): Promise<void> {
  await resetFake(fake.url);
  let stop = false;
  const waits: number[] = [];
  const llmLoop = (async () => {
    while (!stop) {
      const t = await timed(() => chat(p));
      waits.push(t.ms);
      await new Promise((r) => setTimeout(r, 1_500));
    }
  })();
  const started = Date.now();
  // Three models in turn: the GPU entry's dispatch (GPU_DISPATCH_LOOKAHEAD) runs the loaded one's first.
  const models = ['imagegen-flux-schnell', 'imagegen-flux-dev', 'imagegen-qwen-image'];
  const results = await Promise.all(Array.from({ length: renders }, (_, i) => txt2img(p, 1000 + i, { steps: 8, model: models[i % models.length] })));
  const renderMs = Date.now() - started;
  stop = true;
  await llmLoop;
  const stats = await fakeStats(fake.url);
  const outcomes = Object.values(stats.outcomes);
  const once = outcomes.filter((o) => o.filter((x) => x === 'success').length === 1).length;
  const sorted = [...waits].sort((a, b) => a - b);
  say(
    `mix: ${renders} renders: ${results.filter((r) => r.status === 200).length} x 200 in ${renderMs} ms, prompts succeeded once: ${once}/${outcomes.length}, submissions ${Object.keys(stats.submissions).length}; ` +
      `${waits.length} LLM requests: p50 ${sorted[Math.floor(sorted.length / 2)]} ms, p95 ${sorted[Math.floor(sorted.length * 0.95)]} ms, max ${sorted.at(-1)} ms (slice ${SLICE_MS} ms)`,
  );
}

function ourProcesses(): string[] {
  const out = execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => (l.includes(dataDir) || l.includes(tmp) || l.includes('bin/comfy-durable.js')) && !l.includes('ps -eo'));
}

async function sigterm(p: Ports, fake: FakeComfyUI, config: string): Promise<void> {
  await resetFake(fake.url);
  const key = `sigterm-${Date.now()}`;
  const slow = { steps: 40, seed: 4242 };
  const first = txt2img(p, 4242, slow, { 'idempotency-key': key });
  await waitFor('the prompt running in ComfyUI', async () => (await fakeStats(fake.url)).runs.length > 0, 240_000, 200);
  const t0 = Date.now();
  lsProc!.kill('SIGTERM');
  const answer = await first.catch((e: Error) => ({ status: 0, body: e.message }));
  const answeredMs = Date.now() - t0;
  await new Promise<void>((r) => (lsProc!.exitCode !== null ? r() : lsProc!.once('exit', () => r())));
  const exitMs = Date.now() - t0;
  // What is left a moment after llama-swap exited.
  await new Promise((r) => setTimeout(r, 1_000));
  const left = ourProcesses();
  const st = await fakeStats(fake.url);
  say(
    `sigterm: client answered ${answer.status} after ${answeredMs} ms (${answer.body.slice(0, 120)}); llama-swap exited after ${exitMs} ms; ` +
      `processes of ours left: ${left.length}${left.length ? ` ${JSON.stringify(left)}` : ''}; ComfyUI running ${JSON.stringify(st.queue.running)}, ` +
      `models loaded ${JSON.stringify(st.loadedModels)}, interrupts ${st.interrupts}, unload requests ${st.unloadModelsRequests}`,
  );
  await startLlamaSwap(p, config);
  const retry = await timed(() => txt2img(p, 4242, slow, { 'idempotency-key': key }));
  const after = await fakeStats(fake.url);
  const outcomes = Object.values(after.outcomes).flat();
  say(
    `sigterm: llama-swap started again; the retry with the same Idempotency-Key: ${retry.value.status} in ${retry.ms} ms; ` +
      `prompt runs: ${outcomes.join(',')} (successes ${outcomes.filter((o) => o === 'success').length})`,
  );
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const all = wanted.length === 0;
  // PORT_BASE: six consecutive ports from there (a shared machine's agreed range); otherwise free ones.
  const base = process.env.PORT_BASE ? Number(process.env.PORT_BASE) : undefined;
  const [ls, front, gpu, temporal, llm, comfy] =
    base !== undefined
      ? ([0, 1, 2, 3, 4, 5].map((i) => base + i) as [number, number, number, number, number, number])
      : await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
  const p: Ports = { ls, front, gpu, temporal, llm, comfy };
  let fake = await startFakeComfyUI({ port: comfy, stepMs: 50 });
  const config = writeConfig(p, fake.url);
  say(
    `llama-swap ${bin}; logs and config in ${tmp}; load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  try {
    await startLlamaSwap(p, config);
    if (all || wanted.includes('slow-body')) await slowBody(p);
    if (all || wanted.includes('refused')) await refused(p);
    if (all || wanted.includes('comfy-down')) fake = await comfyDown(p, fake);
    if (all || wanted.includes('mix')) await mix(p, fake);
    if (all || wanted.includes('sigterm')) await sigterm(p, fake, config);
    // The secrets are in llama-swap's environment, not in an entry's `env:`: /logs never shows them.
    const logs = await (await fetch(`http://127.0.0.1:${p.ls}/logs`, { headers: AUTH })).text();
    say(
      `logs: /logs is ${logs.length} bytes; GPU_LEASE_TOKEN in it: ${logs.includes(SECRETS.GPU_LEASE_TOKEN)}, API key in it: ${logs.includes(SECRETS.LLAMA_SWAP_API_KEY)}`,
    );
  } finally {
    writeFileSync(path.join(tmp, 'llama-swap.log'), lsLog);
    if (lsProc && lsProc.exitCode === null) {
      lsProc.kill('SIGTERM');
      await new Promise((r) => lsProc!.once('exit', r));
    }
    await fake.close();
  }
}

await main();
