/**
 * Hostile clients against a listening front: the traffic shapes of issue 27's red team (abandoned heavy
 * requests, slow bodies, slow headers, idle sockets), each started in the background and stopped by the test,
 * and the one measure that matters: the latency a well-behaved client's 64×64 img2img sees meanwhile, against
 * the same run's unloaded latency. Used by the regression tests (test/unit/hostile-clients.test.ts) and the
 * fuzzer (test/fuzz).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { makePng } from './fixtures.ts';
import { deflatedZeros, idats, ihdr, pngOf } from './hostile.ts';

export interface Attack {
  /** Requests the attack sent (or sockets it opened). */
  sent(): number;
  stop(): Promise<void>;
}

/** A one-colour `side`×`side` RGBA PNG: 16 Mpx in ~65 KB at 4096, seconds of a byte worker's time to check. */
export async function oneColourPng(side = 4096): Promise<Buffer> {
  return pngOf(ihdr(side, side, 8, 6), ...idats(await deflatedZeros(side * (side * 4 + 1))));
}

export function multipartBody(parts: { name: string; value: string | Buffer; filename?: string }[]): { body: Buffer; contentType: string } {
  const boundary = `----cdhostile${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.filename ? 'Content-Type: image/png\r\n' : ''}\r\n`));
    chunks.push(typeof p.value === 'string' ? Buffer.from(p.value) : p.value);
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Runs `clients` loops that each POST `body` to `url` and give it up after `abandonAfterMs`, again and again,
 * in a process of their own (attacker.mjs): the attacker's own work must not slow the front it is measured on.
 */
async function loop(clients: number, url: string, body: Buffer, headers: Record<string, string>, abandonAfterMs: number): Promise<Attack> {
  const bodyFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'cd-attack-')), 'body');
  writeFileSync(bodyFile, body);
  return attacker({ url, bodyFile, headers, clients, abandonAfterMs });
}

async function attacker(opts: Record<string, unknown>): Promise<Attack> {
  const child = fork(new URL('./attacker.mjs', import.meta.url).pathname, [JSON.stringify(opts)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    execArgv: [],
  });
  let sent = 0;
  child.on('message', (m: { sent?: number }) => {
    if (typeof m.sent === 'number') sent = m.sent;
  });
  await once(child, 'message');
  const counter = setInterval(() => child.connected && child.send('count'), 200);
  counter.unref();
  return {
    sent: () => sent,
    stop: async () => {
      clearInterval(counter);
      const exited = once(child, 'exit');
      if (child.connected) child.send('stop');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2_000))]);
      child.kill('SIGKILL');
    },
  };
}

/** H1: OpenAI edits of a one-colour 16 Mpx PNG (image and mask, ~130 KB), each abandoned after `abandonAfterMs`. */
export async function abandonedHeavyEdits(
  base: string,
  opts: { clients?: number; abandonAfterMs?: number; headers?: Record<string, string> } = {},
): Promise<Attack> {
  const png = await oneColourPng();
  const { body, contentType } = multipartBody([
    { name: 'prompt', value: 'a wall' },
    { name: 'image', value: png, filename: 'i.png' },
    { name: 'mask', value: png, filename: 'm.png' },
  ]);
  return loop(opts.clients ?? 20, `${base}/v1/images/edits`, body, { 'content-type': contentType, ...opts.headers }, opts.abandonAfterMs ?? 1_000);
}

/** H2: SD upscale of an 8×2 000 000 init (17 KB) with a real 4× upscaler name, each abandoned after a while. */
export async function sdUpscaleSlivers(base: string, opts: { clients?: number; abandonAfterMs?: number } = {}): Promise<Attack> {
  const body = Buffer.from(JSON.stringify(sdUpscaleSliverBody(await sliverPng())));
  return loop(opts.clients ?? 2, `${base}/sdapi/v1/img2img`, body, { 'content-type': 'application/json' }, opts.abandonAfterMs ?? 20_000);
}

/** An 8×2 000 000 RGB PNG of zeros (~17 KB). */
export async function sliverPng(width = 8, height = 2_000_000): Promise<Buffer> {
  return pngOf(ihdr(width, height, 8, 2), ...idats(await deflatedZeros(height * (width * 3 + 1))));
}

export function sdUpscaleSliverBody(init: Buffer): Record<string, unknown> {
  return {
    prompt: 'a sliver',
    init_images: [init.toString('base64')],
    script_name: 'SD upscale',
    script_args: ['', 64, '4x-UltraSharp', 2],
    steps: 1,
  };
}

/** M1: idle sockets, more than the server will hold, renewed as it closes them (from the attacker's own process). */
export function idleSockets(port: number, count = 1_100): Promise<Attack> {
  return attacker({ port, sockets: count, prefix: '' });
}

/** M1 (slow headers): sockets that send half a request line and stop. */
export function slowHeaders(port: number, count = 1_100): Promise<Attack> {
  return attacker({ port, sockets: count, prefix: 'POST /sdapi/v1/img2img HTTP/1.1\r\nHost: 127.0.0.1\r\n' });
}

/** M2: large uploads (declared `bytes`) trickled at `bytesPerSecond`, each from its own socket. */
export function slowUploads(port: number, opts: { count?: number; bytes?: number; bytesPerSecond?: number } = {}): Attack {
  const count = opts.count ?? 8;
  const bytes = opts.bytes ?? 600_000;
  const rate = opts.bytesPerSecond ?? 20_000;
  let stopped = false;
  let opened = 0;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const open = (): void => {
    if (stopped) return;
    opened++;
    const s = net.connect(port, '127.0.0.1');
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('connect', () => {
      s.write(`POST /sdapi/v1/img2img HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n{"prompt":"`);
      const chunk = Buffer.alloc(Math.max(1, Math.floor(rate / 10)), 0x61);
      const t = setInterval(() => {
        if (!s.destroyed) s.write(chunk);
      }, 100);
      timers.add(t);
      s.on('close', () => {
        clearInterval(t);
        timers.delete(t);
      });
    });
    s.on('close', () => {
      sockets.delete(s);
      setTimeout(open, 10).unref();
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    sent: () => opened,
    stop: async () => {
      stopped = true;
      for (const t of timers) clearInterval(t);
      for (const s of sockets) s.destroy();
    },
  };
}

/** The well-behaved client's request: a 64×64 img2img, as JSON. */
export function wellBehavedImg2img(): string {
  const init = makePng(64, 64, (x, y) => [x * 4, y * 4, 128, 255]);
  return JSON.stringify({ prompt: 'a small picture', init_images: [init.toString('base64')], steps: 1, width: 64, height: 64 });
}

/** A genuine large upload: a 280×280 photo-like (incompressible) init image, ~420 KB of JSON. */
let large: string | undefined;
function largeImg2img(): string {
  const init = makePng(280, 280, (x, y) => {
    const h = Math.imul((x * 73856093) ^ (y * 19349663), 2654435761) >>> 0;
    return [h & 255, (h >>> 8) & 255, (h >>> 16) & 255, 255];
  });
  return (large ??= JSON.stringify({ prompt: 'a larger picture', init_images: [init.toString('base64')], steps: 1, width: 64, height: 64 }));
}

/**
 * One well-behaved img2img over a fresh connection: its latency and answer. `large` pads the body past the
 * large-body threshold (300 KB, as the red team's genuine upload), so it takes a large-body slot.
 */
export async function wellBehavedRequest(
  base: string,
  opts: { large?: boolean; headers?: Record<string, string> } = {},
): Promise<{ ms: number; status: number; body: string }> {
  const body = opts.large ? largeImg2img() : wellBehavedImg2img();
  const t0 = performance.now();
  const res = await fetch(`${base}/sdapi/v1/img2img`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', connection: 'close', ...opts.headers },
  });
  const text = await res.text();
  return { ms: performance.now() - t0, status: res.status, body: text };
}

/** The median latency of `n` well-behaved requests, one after another; every answer must be `accept(status, body)`. */
export async function medianLatency(
  base: string,
  n: number,
  opts: { large?: boolean; headers?: Record<string, string> } = {},
): Promise<{ ms: number; answers: Array<{ status: number; body: string }> }> {
  const samples: number[] = [];
  const answers: Array<{ status: number; body: string }> = [];
  for (let i = 0; i < n; i++) {
    const r = await wellBehavedRequest(base, opts);
    samples.push(r.ms);
    answers.push({ status: r.status, body: r.body });
  }
  samples.sort((a, b) => a - b);
  return { ms: samples[Math.floor(samples.length / 2)]!, answers };
}
