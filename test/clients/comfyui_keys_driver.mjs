// ComfyUI's API with two client keys on one comfy-durable (a real or fake ComfyUI behind it): Alice queues a
// graph on the tiny SD1.5 checkpoint (`tiny-sd15-random.safetensors`, ../shared/tools/real-comfyui) with
// `extra_data.webhook`, Bob listens on the same client id; prints what each socket heard (binary preview frames
// as binary(type,image type,bytes)), each key's /queue and /history, /view, and the webhook (written to HOOK_FILE,
// for a Standard Webhooks library to verify). The service needs API_KEYS with keys alice and bob (client role),
// WEBHOOK_SECRET and WEBHOOK_ALLOWED_TARGETS=127.0.0.1; a receiver listens on 127.0.0.1:9911.
// usage: BASE=http://127.0.0.1:7860 ALICE=<alice's token> BOB=<bob's token> HOOK_FILE=/tmp/hook.json [STEPS=12 SIZE=128] node comfyui_keys_driver.mjs
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import WebSocket from 'ws';

const base = process.env.BASE;
const alice = { authorization: `Bearer ${process.env.ALICE}` };
const bob = { authorization: `Bearer ${process.env.BOB}` };
const hooks = [];
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    hooks.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(204).end();
  });
});
await new Promise((r) => receiver.listen(9911, '127.0.0.1', r));

const listen = async (clientId, headers) => {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws?clientId=${clientId}`, { headers });
  const heard = [];
  ws.on('message', (d, bin) => {
    if (!bin) heard.push(JSON.parse(d.toString()));
    else heard.push({ type: `binary(${d.readUInt32BE(0)},${d.readUInt32BE(4)},${d.length}B)` });
  });
  await new Promise((res, rej) => {
    ws.once('open', res);
    ws.once('error', rej);
  });
  return { ws, heard };
};
const j = async (path, headers, body) => {
  const res = await fetch(
    `${base}${path}`,
    body === undefined ? { headers } : { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
  );
  return { status: res.status, json: await res.json() };
};
const graph = {
  ckpt: { class_type: 'CheckpointLoaderSimple', inputs: { ckpt_name: 'tiny-sd15-random.safetensors' } },
  pos: { class_type: 'CLIPTextEncode', inputs: { text: 'a red fox', clip: ['ckpt', 1] } },
  neg: { class_type: 'CLIPTextEncode', inputs: { text: '', clip: ['ckpt', 1] } },
  latent: { class_type: 'EmptyLatentImage', inputs: { width: Number(process.env.SIZE ?? 64), height: Number(process.env.SIZE ?? 64), batch_size: 1 } },
  sampler: {
    class_type: 'KSampler',
    inputs: {
      model: ['ckpt', 0],
      positive: ['pos', 0],
      negative: ['neg', 0],
      latent_image: ['latent', 0],
      seed: 7,
      steps: Number(process.env.STEPS ?? 4),
      cfg: 5,
      sampler_name: 'euler',
      scheduler: 'normal',
      denoise: 1,
    },
  },
  decode: { class_type: 'VAEDecode', inputs: { samples: ['sampler', 0], vae: ['ckpt', 2] } },
  save: { class_type: 'SaveImage', inputs: { images: ['decode', 0], filename_prefix: 'merged-real' } },
};
const t0 = Date.now();
const mine = await listen('shared-client', alice);
const theirs = await listen('shared-client', bob);
const refused = await j('/prompt', alice, { prompt: graph, extra_data: { webhook: 'http://10.9.8.7/hook' } });
console.log('alice /prompt with a webhook to 10.9.8.7:', refused.status, JSON.stringify(refused.json.error));
const sent = await j('/prompt', alice, { prompt: graph, client_id: 'shared-client', extra_data: { webhook: 'http://127.0.0.1:9911/hook' } });
console.log('alice /prompt:', sent.status, JSON.stringify(sent.json));
const id = sent.json.prompt_id;
let sawQueue = false;
while (!mine.heard.some((m) => m.type === 'executing' && m.data.node === null)) {
  if (!sawQueue) {
    const [qa, qb] = await Promise.all([j('/queue', alice), j('/queue', bob)]);
    if (qa.json.queue_running.length + qa.json.queue_pending.length > 0) {
      sawQueue = true;
      console.log('queue as alice:', JSON.stringify(qa.json).slice(0, 160), '| as bob:', JSON.stringify(qb.json));
      console.log('bob POST /interrupt {}:', (await j('/interrupt', bob, {})).status);
    }
  }
  await new Promise((r) => setTimeout(r, 250));
}
console.log(
  `alice's socket, ${((Date.now() - t0) / 1000).toFixed(1)} s:`,
  mine.heard.map((m) => m.type + (m.type === 'progress' ? `${m.data.value}/${m.data.max}` : '')).join(' '),
);
console.log("bob's socket (same clientId):", theirs.heard.map((m) => m.type).join(' '));
const ha = await j(`/history/${id}`, alice);
const hb = await j(`/history/${id}`, bob);
console.log('history as alice:', ha.json[id]?.status?.status_str, JSON.stringify(ha.json[id]?.outputs));
console.log('history as bob:', JSON.stringify(hb.json), '| bob list holds it:', Object.keys((await j('/history', bob)).json).includes(id));
const img = ha.json[id].outputs.save.images[0];
const view = await fetch(`${base}/view?filename=${img.filename}&type=output`, { headers: alice });
const png = Buffer.from(await view.arrayBuffer());
console.log('view:', view.status, view.headers.get('content-type'), png.length, 'B', png.subarray(1, 4).toString());
while (!hooks.length) await new Promise((r) => setTimeout(r, 200));
writeFileSync(process.env.HOOK_FILE, JSON.stringify(hooks[0]));
console.log('webhook arrived:', hooks[0].headers['webhook-id'], hooks[0].body.slice(0, 300));
mine.ws.close();
theirs.ws.close();
receiver.close();
process.exit(0);
