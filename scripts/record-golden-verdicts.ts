/**
 * Records a real ComfyUI's verdict (`POST /prompt` status and body) on every golden graph that
 * test/fixtures/real-comfyui/golden-real.json does not hold yet, and adds it there. The verdict test
 * (test/unit/preflight-verdicts.test.ts) holds the project's pre-submit check against these answers, so every
 * new golden graph needs one. Nothing is rendered: a slow model-free blocker prompt runs first, the golden
 * graphs queue behind it and are deleted from the queue once answered, then the blocker is interrupted.
 *
 * Usage: npx tsx scripts/record-golden-verdicts.ts http://127.0.0.1:8188
 *        npx tsx scripts/record-golden-verdicts.ts http://127.0.0.1:8188 --sglang plugin|no-plugin
 * `--sglang`: the sglang engine's golden graphs (test/golden/sglang/), all re-recorded under that variant in
 * test/fixtures/real-comfyui/sglang-golden-real.json (`plugin`: a ComfyUI with SGLang's plugin registered;
 * `no-plugin`: one without it).
 * The ComfyUI needs the golden graphs' files: model files (zero-byte files pass validation), LoRAs and
 * upscale models under the names the graphs use, and the `comfy-durable/<sha256>.png` inputs in its input
 * folder (any PNG under that name: validation checks that the file exists).
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';

const base = process.argv[2]?.replace(/\/$/, '');
if (!base) {
  process.stderr.write('usage: record-golden-verdicts.ts <comfyui-url>\n');
  process.exit(2);
}
const sglangAt = process.argv.indexOf('--sglang');
const variant = sglangAt > 0 ? process.argv[sglangAt + 1] : undefined;
if (variant !== undefined && variant !== 'plugin' && variant !== 'no-plugin') {
  process.stderr.write('--sglang takes plugin or no-plugin\n');
  process.exit(2);
}
const goldenDir = new URL(variant ? '../test/golden/sglang/' : '../test/golden/', import.meta.url);
const outFile = new URL(`../test/fixtures/real-comfyui/${variant ? 'sglang-golden-real.json' : 'golden-real.json'}`, import.meta.url);
const all = JSON.parse(existsSync(outFile) ? readFileSync(outFile, 'utf8') : '{}') as Record<string, Record<string, unknown>>;
if (variant) all[variant] = {};
const recorded = (variant ? all[variant] : all) as Record<string, unknown>;
const missing = readdirSync(goldenDir).filter((f) => f.endsWith('.json') && !(f in recorded));
if (missing.length === 0) {
  process.stdout.write('every golden graph has a recorded verdict\n');
  process.exit(0);
}

const post = async (path: string, body: unknown): Promise<{ status: number; json: unknown }> => {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
};

/** Twelve lanczos scalings to 3072² and back: seconds of CPU and no model, so the graphs behind it wait. */
const blocker: Record<string, unknown> = { load: { class_type: 'LoadImage', inputs: { image: 'example.png' } } };
let prev = 'load';
for (let i = 0; i < 12; i++) {
  const size = i % 2 === 0 ? 3072 : 64;
  blocker[`s${i}`] = { class_type: 'ImageScale', inputs: { image: [prev, 0], upscale_method: 'lanczos', width: size, height: size, crop: 'disabled' } };
  prev = `s${i}`;
}
blocker.save = { class_type: 'SaveImage', inputs: { images: [prev, 0], filename_prefix: `comfy-durable-verdicts/blocker-${Date.now()}` } };

const blockerId = randomUUID();
const b = await post('/prompt', { prompt: blocker, prompt_id: blockerId });
if (b.status !== 200) throw new Error(`blocker refused: ${JSON.stringify(b.json)}`);
const queued: string[] = [];
try {
  for (const file of missing) {
    const graph = JSON.parse(readFileSync(new URL(file, goldenDir), 'utf8')) as unknown;
    const id = randomUUID();
    const answer = await post('/prompt', { prompt: graph, prompt_id: id });
    if (answer.status === 200) queued.push(id);
    recorded[file] = { status: answer.status, response: answer.json };
    process.stdout.write(`${file}: HTTP ${answer.status} ${JSON.stringify((answer.json as { node_errors?: unknown })?.node_errors ?? answer.json)}\n`);
  }
} finally {
  // The blocker may still be pending behind someone else's prompt: dequeue it too, then stop it if it runs.
  await post('/queue', { delete: [...queued, blockerId] });
  await post('/interrupt', { prompt_id: blockerId });
}
const sorted = Object.fromEntries(Object.entries(recorded).sort(([a], [c]) => a.localeCompare(c)));
if (variant) all[variant] = sorted;
writeFileSync(outFile, `${JSON.stringify(variant ? all : sorted, null, 1)}\n`);
process.stdout.write(`recorded ${missing.length} verdicts in ${outFile.pathname}\n`);
