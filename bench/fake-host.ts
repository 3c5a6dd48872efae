/**
 * `tsx bench/fake-host.ts N`: N fake ComfyUIs (zero render time) on ephemeral loopback ports in one
 * process; prints `FAKES ["http://127.0.0.1:…", …]` once listening, runs until SIGTERM/SIGINT.
 */
import { rmSync } from 'node:fs';
import { startFakeComfyUI, type FakeComfyUI } from '../tools/fake-comfyui/server.ts';

const n = Math.max(1, Math.min(16, Number(process.argv[2] ?? '4') || 4));
const fakes: FakeComfyUI[] = [];
for (let i = 0; i < n; i++) fakes.push(await startFakeComfyUI({ port: 0, host: '127.0.0.1', stepMs: 0, renderMs: 0 }));
process.stdout.write(`FAKES ${JSON.stringify(fakes.map((f) => f.url))}\n`);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void Promise.allSettled(fakes.map((f) => f.close())).then(() => {
    for (const f of fakes) rmSync(f.dataDir, { recursive: true, force: true });
    process.exit(0);
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// Never outlive the bench by much, whatever happens to it.
setTimeout(stop, 15 * 60_000).unref();
process.on('disconnect', stop);
