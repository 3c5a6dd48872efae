/**
 * Records a real ComfyUI's verdict (`POST /prompt` status and body) on graphs whose only faults are the
 * definite facts the client's pre-submit check acts on (src/comfyui/preflight.ts): model files not in a
 * loader's list and absent node classes, connected to every output, to some outputs, or to none. The
 * verdict test (test/unit/preflight-verdicts.test.ts) holds the client's check against the recording.
 *
 * Usage: npx tsx scripts/record-verdicts.ts http://127.0.0.1:8188 test/fixtures/real-comfyui/verdicts-model-files.json
 * Needs the golden graphs' model files on that ComfyUI and `example.png` in its input folder (both are there
 * on a stock ComfyUI 0.33.0 with ComfyUI-GGUF and the profiles' default model files). Graphs that are accepted queue only
 * the model-free branch (LoadImage → ImageScale → SaveImage), which runs in well under a second on CPU.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const [base, out] = process.argv.slice(2);
if (!base || !out) {
  process.stderr.write('usage: record-verdicts.ts <comfyui-url> <out.json>\n');
  process.exit(2);
}

type Graph = Record<string, { class_type?: string; inputs: Record<string, unknown>; _meta?: { title: string } }>;
const golden = (): Graph => JSON.parse(readFileSync(new URL('../test/golden/imagegen-flux-schnell-txt2img.json', import.meta.url), 'utf8')) as Graph;
const modelFree = (prefix: string): Graph => ({
  mf_load: { class_type: 'LoadImage', inputs: { image: 'example.png' }, _meta: { title: 'Load Image' } },
  mf_scale: {
    class_type: 'ImageScale',
    inputs: { image: ['mf_load', 0], upscale_method: 'nearest-exact', width: 48, height: 40, crop: 'disabled' },
    _meta: { title: 'Upscale Image' },
  },
  mf_save: {
    class_type: 'SaveImage',
    inputs: { images: ['mf_scale', 0], filename_prefix: `comfy-durable-verdicts/${prefix}` },
    _meta: { title: 'Save Image' },
  },
});

function withInput(g: Graph, node: string, input: string, value: unknown): Graph {
  g[node]!.inputs[input] = value;
  return g;
}

const cases: Array<{ name: string; prompt: unknown }> = [
  { name: 'unet file missing, the only output depends on it', prompt: withInput(golden(), 'unet', 'unet_name', 'not-installed-Q8_0.gguf') },
  {
    name: 'unet and vae files missing',
    prompt: withInput(withInput(golden(), 'unet', 'unet_name', 'not-installed-Q8_0.gguf'), 'vae', 'vae_name', 'not-installed-vae.safetensors'),
  },
  {
    name: 'text encoder file missing (second clip of a dual loader)',
    prompt: withInput(golden(), 'clip', 'clip_name2', 'not-installed-clip.safetensors'),
  },
  {
    name: 'vae file missing on one output, another output valid (partial)',
    prompt: { ...withInput(golden(), 'vae', 'vae_name', 'not-installed-vae.safetensors'), ...modelFree('partial') },
  },
  {
    name: 'model file missing in a loader no output uses',
    prompt: {
      ...modelFree('unused-loader'),
      lone_vae: { class_type: 'VAELoader', inputs: { vae_name: 'not-installed-vae.safetensors' }, _meta: { title: 'Load VAE' } },
    },
  },
  {
    name: 'absent node class in a node no output uses',
    prompt: { ...modelFree('unused-class'), lone: { class_type: 'NotInstalledNode', inputs: {}, _meta: { title: 'Not Installed' } } },
  },
];

const stats = (await (await fetch(new URL('/system_stats', base))).json()) as { system?: { comfyui_version?: string } };
const recorded = [];
for (const c of cases) {
  const res = await fetch(new URL('/prompt', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: c.prompt }),
  });
  const json: unknown = await res.json().catch(() => null);
  recorded.push({ name: c.name, request_json: { prompt: c.prompt }, status: res.status, json });
  process.stdout.write(`${res.status} ${c.name}\n`);
}
writeFileSync(
  out,
  `${JSON.stringify(
    {
      about: 'POST /prompt verdicts of a real ComfyUI on graphs with missing model files / node classes, recorded by scripts/record-verdicts.ts',
      server: { comfyui_version: stats.system?.comfyui_version ?? null, recorded_at: new Date().toISOString() },
      steps: recorded,
    },
    null,
    1,
  )}\n`,
);
