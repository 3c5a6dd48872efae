// A1111 ControlNet and IP-Adapter units through comfy-durable on a real ComfyUI with the tiny random Flux-dev
// weights (tools/tiny-models/): the same txt2img (seed, prompt, size, steps) without a unit, with a canny
// ControlNet unit, and with an IP-Adapter unit (Flux Redux); prints each render's time, output hash and the mean
// absolute pixel difference against the baseline. A unit that reaches the sampler changes the output.
// usage: BASE=http://127.0.0.1:7860 [STEPS=2 SIZE=64] node test/clients/controlnet_real_driver.mjs
import { createHash } from 'node:crypto';
import http from 'node:http';
import { PNG } from 'pngjs';

const base = process.env.BASE ?? 'http://127.0.0.1:7860';
const steps = Number(process.env.STEPS ?? 2);
const size = Number(process.env.SIZE ?? 64);

// A hint with hard edges (a white square on black), so Canny finds lines.
const hint = new PNG({ width: size, height: size });
for (let y = 0; y < size; y++)
  for (let x = 0; x < size; x++) {
    const on = x > size / 4 && x < (3 * size) / 4 && y > size / 4 && y < (3 * size) / 4;
    hint.data.set(on ? [255, 255, 255, 255] : [0, 0, 0, 255], (y * size + x) * 4);
  }
const hintB64 = PNG.sync.write(hint).toString('base64');

const body = (units) => ({
  prompt: 'a lighthouse at dusk',
  model: 'imagegen-flux-dev',
  seed: 42,
  steps,
  width: size,
  height: size,
  ...(units ? { alwayson_scripts: { controlnet: { args: units } } } : {}),
});
const cases = [
  ['baseline', undefined],
  ['controlnet canny', [{ enabled: true, module: 'canny', model: 'flux1-dev-controlnet-union-pro', weight: 1, image: hintB64 }]],
  ['ip-adapter (redux)', [{ enabled: true, module: 'ip-adapter-auto', model: 'flux1-redux-dev', weight: 1, image: hintB64 }]],
];

// node:http without a timeout: the first Flux prompt on CPU takes minutes (fetch gives up after 300 s). The
// Idempotency-Key makes a re-run of this driver attach to the renders a previous run started.
const post = (path, body, key) =>
  new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, answer: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(data);
  });
const pixels = (b64) => PNG.sync.read(Buffer.from(b64, 'base64')).data;
let baseline;
for (const [name, units] of cases) {
  const t0 = Date.now();
  const { status, answer } = await post('/sdapi/v1/txt2img', body(units), `controlnet-real-${name.replace(/\W+/g, '-')}-${steps}-${size}`);
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (status !== 200) {
    console.log(`${name}: HTTP ${status} after ${secs}s ${JSON.stringify(answer).slice(0, 400)}`);
    continue;
  }
  const img = answer.images[0];
  const info = JSON.parse(answer.info);
  const px = pixels(img);
  baseline ??= px;
  let diff = 0;
  for (let i = 0; i < px.length; i++) diff += Math.abs(px[i] - baseline[i]);
  console.log(
    `${name}: HTTP 200 in ${secs}s render ${info.render_id ?? answer.render_id ?? '?'} sha256 ${createHash('sha256').update(img).digest('hex').slice(0, 16)}` +
      ` mean |diff| vs baseline ${(diff / px.length).toFixed(2)} infotext: ${String(info.infotexts?.[0] ?? '')
        .split('\n')
        .at(-1)}` +
      (info.warnings?.length ? ` warnings: ${JSON.stringify(info.warnings)}` : ''),
  );
}
