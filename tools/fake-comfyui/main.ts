/**
 * CLI: `npx tsx tools/fake-comfyui/main.ts --port 8188 [--host 127.0.0.1] [--data-dir DIR] [--render-ms N] [--step-ms N]
 * [--sgld-plugin]`.
 * Runs until SIGINT/SIGTERM, then closes cleanly (queue and history are lost, as with the real server).
 */
import { parseArgs } from 'node:util';
import { startFakeComfyUI } from './server.ts';

function nonNegativeInt(name: string, v: string | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer, got ${JSON.stringify(v)}\n`);
    process.exit(2);
  }
  return n;
}

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8188' },
    host: { type: 'string', default: '127.0.0.1' },
    'data-dir': { type: 'string', default: 'data/fake-comfyui' },
    'render-ms': { type: 'string' },
    'step-ms': { type: 'string' },
    'sgld-plugin': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
  strict: true,
});

if (values.help) {
  process.stdout.write(
    'Usage: fake-comfyui [--port 8188] [--host 127.0.0.1] [--data-dir data/fake-comfyui] [--render-ms 0] [--step-ms 0] [--sgld-plugin]\n' +
      "--sgld-plugin (or FAKE_COMFYUI_SGLD_PLUGIN=1): serve SGLang's ComfyUI plugin nodes (recorded schemas).\n" +
      'Test controls: GET /__fake/stats, GET|POST /__fake/faults, POST /__fake/reset. LOG_LEVEL sets verbosity (default warn).\n',
  );
  process.exit(0);
}

const fake = await startFakeComfyUI({
  port: nonNegativeInt('port', values.port, 8188),
  host: values.host,
  dataDir: values['data-dir'],
  renderMs: nonNegativeInt('render-ms', values['render-ms'], 0),
  stepMs: nonNegativeInt('step-ms', values['step-ms'], 0),
  ...(values['sgld-plugin'] ? { sgldPlugin: true } : {}),
});
process.stdout.write(`fake ComfyUI listening on ${fake.url} (data dir ${fake.dataDir})\n`);

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    void fake.close().then(() => process.exit(0));
  });
}
