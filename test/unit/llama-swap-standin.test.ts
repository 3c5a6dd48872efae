/**
 * The stand-in itself against the recorded facts it claims (docs/llama-swap-facts.md), with tiny node upstreams:
 * routing, the concurrency limit, queueing behind in-flight requests, the process-group stop and the health
 * timeout. If it drifted from the facts, the GPU-sharing tests that use it would prove nothing.
 */
import { mkdtempSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LlamaSwapStandin, splitCommand } from '../support/llama-swap-standin.ts';
import { freePort } from '../support/ports.ts';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'cd-standin-'));
// An upstream: /health, /hold (answers when /release is called), anything else echoes; it starts a grandchild
// in its own process group and records the signals both get.
const upstream = path.join(tmp, 'upstream.mjs');
writeFileSync(
  upstream,
  `import http from 'node:http';
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
const [port, log, healthy] = [Number(process.argv[2]), process.argv[3], process.argv[4] !== 'never-healthy'];
const note = (m) => appendFileSync(log, m + '\\n');
// Healthy only once the grandchild has its SIGTERM handler: a stop before that would kill it silently.
let grandchildReady = false;
const grandchild = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => { require('fs').appendFileSync(process.argv[1], 'grandchild SIGTERM\\\\n'); process.exit(0); }); process.stdout.write('ready'); setInterval(() => {}, 1000);", log], { stdio: ['ignore', 'pipe', 'ignore'] });
grandchild.stdout.once('data', () => { grandchildReady = true; });
process.on('SIGTERM', () => { note('upstream SIGTERM'); setTimeout(() => process.exit(0), 200); });
const held = [];
let early = 0;
http.createServer((req, res) => {
  if (req.url === '/health') return res.writeHead(healthy && grandchildReady ? 200 : 503).end();
  // A release that arrives before its hold (the proxy may not have forwarded it yet) is kept for it.
  if (req.url === '/hold') { if (early > 0) { early--; return res.end('released'); } return held.push(res); }
  if (req.url.startsWith('/release')) { const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? 1); const h = held.splice(0, n); early += n - h.length; for (const r of h) r.end('released'); return res.end('ok'); }
  let body = ''; req.on('data', (c) => (body += c)); req.on('end', () => res.setHeader('content-type', 'application/json').end(JSON.stringify({ port, path: req.url, host: req.headers.host, body })));
}).listen(port, '127.0.0.1');
`,
);

let ls: LlamaSwapStandin;
let ports: Record<string, number>;
const logs = { a: path.join(tmp, 'a.log'), b: path.join(tmp, 'b.log'), c: path.join(tmp, 'c.log') };

beforeAll(async () => {
  ports = { a: await freePort(), b: await freePort(), c: await freePort() };
  const entry = (id: 'a' | 'b' | 'c', extra = '') =>
    `  ${id}:\n    cmd: ${process.execPath} ${upstream} ${ports[id]} ${logs[id]} ${extra}\n    proxy: http://127.0.0.1:${ports[id]}\n`;
  ls = new LlamaSwapStandin({
    config: `healthCheckTimeout: 15\nmodels:\n${entry('a')}    aliases: [a-alias]\n    concurrencyLimit: 2\n${entry('b')}${entry('c', 'never-healthy')}`,
  });
  await ls.listen();
}, 60_000);

afterAll(async () => {
  await ls?.close();
}, 60_000);

const post = (route: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${ls.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('llama-swap stand-in (docs/llama-swap-facts.md)', () => {
  it('splits commands like a shell line without a shell', () => {
    expect(splitCommand(`node "a b" 'c d' e`)).toEqual(['node', 'a b', 'c d', 'e']);
  });

  it("routes by model in the body, by alias, by /upstream prefix (stripped); other paths get Go's 404 (lines 15-21)", async () => {
    const viaAlias = (await (await post('/sdapi/v1/txt2img', { model: 'a-alias', prompt: 'x' })).json()) as { port: number; path: string; body: string };
    expect(viaAlias.port).toBe(ports.a);
    expect(JSON.parse(viaAlias.body).model).toBe('a-alias');
    const up = (await (await fetch(`${ls.url}/upstream/a-alias/sdapi/v1/options?x=1`)).json()) as { path: string };
    expect(up.path).toBe('/sdapi/v1/options?x=1');
    const other = await fetch(`${ls.url}/sdapi/v1/options`);
    expect(other.status).toBe(404);
    expect(await other.text()).toBe('404 page not found\n');
    const none = await post('/v1/chat/completions', { messages: [] });
    expect(none.status).toBe(404);
  });

  it('forwards Host unchanged (line 25)', async () => {
    // fetch() may not set Host: a plain request does.
    const body = await new Promise<string>((resolve, reject) => {
      const req = http.request(`${ls.url}/upstream/a/x`, { headers: { host: 'gpu-box.lan:8080' } }, (res) => {
        let t = '';
        res.on('data', (c: Buffer) => (t += c.toString()));
        res.on('end', () => resolve(t));
      });
      req.on('error', reject);
      req.end();
    });
    expect((JSON.parse(body) as { host: string }).host).toBe('gpu-box.lan:8080');
  });

  it("queues a request that would evict an entry with requests in flight, then stops that entry's whole process group (lines 45-46, 51)", async () => {
    const mark = ls.events.length;
    const held = fetch(`${ls.url}/upstream/a/hold`).then((r) => r.text());
    await ls.waitFor((e) => e.type === 'serve' && e.model === 'a' && e.detail?.path === '/hold', mark);
    const other = post('/v1/chat/completions', { model: 'b' });
    await ls.waitFor((e) => e.type === 'queued' && e.model === 'b', mark);
    expect(ls.state('a')).toBe('ready');
    await fetch(`http://127.0.0.1:${ports.a}/release`);
    expect(await held).toBe('released');
    expect((await other).status).toBe(200);
    const stop = await ls.waitFor((e) => e.type === 'stop' && e.model === 'a', mark);
    const spawnB = await ls.waitFor((e) => e.type === 'spawn' && e.model === 'b', mark);
    expect(stop.at).toBeLessThanOrEqual(spawnB.at);
    await ls.waitFor((e) => e.type === 'exit' && e.model === 'a', mark);
    const log = readFileSync(logs.a, 'utf8');
    expect(log).toContain('upstream SIGTERM');
    // The grandchild is in the same process group: it got the SIGTERM too.
    await expect.poll(() => existsSync(logs.a) && readFileSync(logs.a, 'utf8').includes('grandchild SIGTERM'), { timeout: 10_000 }).toBe(true);
  }, 60_000);

  it('answers 429 beyond concurrencyLimit, aliases sharing it (lines 26-27)', async () => {
    const holds = [fetch(`${ls.url}/upstream/a/hold`), fetch(`${ls.url}/upstream/a-alias/hold`)];
    await ls.waitFor(() => ls.inFlight('a') === 2 || false);
    const third = await fetch(`${ls.url}/upstream/a/x`);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe('concurrency_limit');
    await fetch(`http://127.0.0.1:${ports.a}/release?n=2`);
    await Promise.all(holds);
  }, 60_000);

  it('kills an entry whose check never passes at healthCheckTimeout and answers 500 (lines 47-49)', async () => {
    const res = await post('/v1/chat/completions', { model: 'c' });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/health check timed out/);
  }, 60_000);
});
