// Drives a running SillyTavern server's ComfyUI source (its /api/sd/comfy/* endpoints, which call ComfyUI
// themselves) the way its stable-diffusion extension does from the browser: ping, the model, sampler and
// scheduler lists, the default workflow with the extension's placeholders filled in, generate.
// usage: node sillytavern_comfy_driver.mjs SILLYTAVERN_URL COMFY_URL
const [st, comfyUrl] = process.argv.slice(2);
const call = async (path, body) => {
  const t0 = Date.now();
  const res = await fetch(`${st}/api/sd/comfy/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, ms: Date.now() - t0 };
};
const ping = await call('ping', { url: comfyUrl });
console.log(`ping: ${ping.status}`);
const models = await call('models', { url: comfyUrl });
const samplers = await call('samplers', { url: comfyUrl });
const schedulers = await call('schedulers', { url: comfyUrl });
console.log(`models: ${models.status} ${models.text.slice(0, 120)}`);
console.log(`samplers: ${samplers.status} (${samplers.status === 200 ? JSON.parse(samplers.text).length : 0}), schedulers: ${schedulers.status}`);
if (models.status !== 200) process.exit(1);
const workflowText = JSON.parse((await call('workflow', { file_name: 'Default_Comfy_Workflow.json' })).text);
// The extension's substitutions (public/scripts/extensions/stable-diffusion/index.js generateComfyImage).
const settings = { model: JSON.parse(models.text)[0].value, sampler: 'euler', scheduler: 'normal', steps: 2, scale: 7, width: 64, height: 64 };
let workflow = workflowText.replaceAll('"%prompt%"', JSON.stringify('a lighthouse at dusk')).replaceAll('"%negative_prompt%"', JSON.stringify('blurry'));
workflow = workflow.replaceAll('"%seed%"', JSON.stringify(1234));
for (const [k, v] of Object.entries(settings)) workflow = workflow.replaceAll(`"%${k}%"`, JSON.stringify(v));
const gen = await call('generate', { url: comfyUrl, prompt: `{\n "prompt": ${workflow}\n}` });
const png = gen.status === 200 ? Buffer.from(gen.text, 'base64') : Buffer.alloc(0);
console.log(
  `generate: ${gen.status} in ${gen.ms} ms, ${png.length} bytes PNG ${png.length ? `${png.readUInt32BE(16)}x${png.readUInt32BE(20)}` : gen.text.slice(0, 200)}`,
);
process.exit(gen.status === 200 ? 0 : 1);
