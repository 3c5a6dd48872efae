/**
 * Contract checks for any ComfyUI URL, using only core nodes that need no model weights
 * (LoadImage → ImageScale → SaveImage), so they run against a real GPU box, a CPU-only ComfyUI, or the fake.
 * They cover what the durable pipeline relies on: uploads and their collision rule, client-chosen prompt ids,
 * WebSocket following to `executing:null`, history outputs and `/view`, validation errors with node errors,
 * status reconciliation for unknown prompts, the queue, and the node set the model profiles need.
 */
import { randomUUID } from 'node:crypto';
import { PNG } from 'pngjs';
import { ComfyClient } from './client.ts';
import { ComfyValidationError } from './errors.ts';
import { submitAndFollow } from './follow.ts';
import type { ComfyGraph } from './graph.ts';
import { readPngSize } from './png-metadata.ts';
import { derivePromptId } from './prompt-id.ts';
import { validateGraph } from './validate.ts';
import { listProfiles } from '../models/registry.ts';
import { defaultVideoSpec } from '../models/video.ts';
import { planRender } from '../models/plan.ts';
import type { ModelProfile } from '../models/profile.ts';
import type { RenderRequest } from '../render/types.ts';

export interface ContractResult {
  name: string;
  ok: boolean;
  detail?: string;
}

/** Nodes the model profiles build graphs from; a ComfyUI missing any cannot serve that family. */
export const REQUIRED_NODES = [
  'UnetLoaderGGUF', 'DualCLIPLoaderGGUF', 'CLIPLoader', 'VAELoader', 'CLIPTextEncode', 'ConditioningZeroOut',
  'FluxGuidance', 'FluxKontextImageScale', 'ReferenceLatent', 'TextEncodeQwenImageEditPlus', 'EmptyLatentImage',
  'EmptySD3LatentImage', 'SetLatentNoiseMask', 'KSampler', 'ModelSamplingAuraFlow', 'VAEDecode', 'VAEEncode',
  'LoadImage', 'LoadImageMask', 'ImageStitch', 'SaveImage',
] as const;

function testPng(width: number, height: number, seed: number): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) {
    png.data[i * 4] = (i * 7 + seed) & 255;
    png.data[i * 4 + 1] = (i * 13 + seed * 3) & 255;
    png.data[i * 4 + 2] = (i * 29) & 255;
    png.data[i * 4 + 3] = 255;
  }
  return PNG.sync.write(png);
}

export function modelFreeGraph(image: string, width: number, height: number, prefix: string): ComfyGraph {
  return {
    load: { class_type: 'LoadImage', inputs: { image }, _meta: { title: 'Load Image' } },
    scale: {
      class_type: 'ImageScale',
      inputs: { image: ['load', 0], upscale_method: 'nearest-exact', width, height, crop: 'disabled' },
      _meta: { title: 'Upscale Image' },
    },
    save: { class_type: 'SaveImage', inputs: { images: ['scale', 0], filename_prefix: prefix }, _meta: { title: 'Save Image' } },
  };
}

export async function runContractChecks(baseUrl: string): Promise<ContractResult[]> {
  const client = new ComfyClient({ baseUrl });
  const results: ContractResult[] = [];
  const check = async (name: string, fn: () => Promise<string | void>): Promise<void> => {
    try {
      const detail = await fn();
      results.push(detail ? { name, ok: true, detail } : { name, ok: true });
    } catch (err) {
      results.push({ name, ok: false, detail: err instanceof Error ? err.message : String(err) });
    }
  };
  const must = (cond: unknown, message: string): void => {
    if (!cond) throw new Error(message);
  };
  const run = randomUUID().slice(0, 8);

  try {
    await check('system_stats answers', async () => {
      const caps = await client.capabilities();
      return `ComfyUI ${caps.version ?? '?'}, jobs API ${caps.jobsApi ? 'yes' : 'no'}`;
    });

    await check('object_info lists the nodes the model profiles use', async () => {
      const info = await client.objectInfo();
      const missing = REQUIRED_NODES.filter((n) => !info[n]);
      must(missing.length === 0, `missing nodes: ${missing.join(', ')}`);
      return `${Object.keys(info).length} nodes`;
    });

    for (const profile of listProfiles()) {
      await check(`${profile.id}: its graph validates (nodes installed, model files present)`, async () => {
        const info = await client.objectInfo();
        const plan = planRender(sampleRequest(profile), { renderId: 'render-contract' });
        const v = validateGraph(plan.items[0]!.graph, info);
        const problems = Object.entries(v.nodeErrors).flatMap(([id, ne]) => ne.errors.map((e) => `${id} (${ne.class_type}): ${e.message} ${e.details}`.trim()));
        must(v.ok && problems.length === 0, (v.ok ? '' : `${v.error.message}; `) + problems.join('; '));
      });
    }

    const filename = `contract-${run}.png`;
    const bytes = testPng(32, 24, 1);
    await check('upload is content-addressed (identical bytes keep the name, different bytes get a new one)', async () => {
      const a = await client.uploadImage({ bytes, filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(a.name === filename, `first upload stored as ${a.name}`);
      const b = await client.uploadImage({ bytes, filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(b.name === filename, `identical re-upload renamed to ${b.name}`);
      const c = await client.uploadImage({ bytes: testPng(32, 24, 2), filename, subfolder: 'comfy-durable-contract', type: 'input' });
      must(c.name !== filename, 'different bytes overwrote the existing file');
    });

    await check('a client-chosen prompt id is followed to completion and its output downloads', async () => {
      const promptId = derivePromptId(['contract', run, 1]);
      const graph = modelFreeGraph(`comfy-durable-contract/${filename}`, 48, 40, `comfy-durable-contract/${run}`);
      const res = await submitAndFollow(client, { graph, promptId, stallTimeoutMs: 60_000, pollIntervalMs: 1_000 });
      must(res.promptId === promptId, `ComfyUI used prompt id ${res.promptId}`);
      const image = res.files.find((f) => f.type === 'output' && f.filename.endsWith('.png'));
      must(image, `no PNG output in ${JSON.stringify(res.files)}`);
      const png = (await client.view(image!)).data;
      const size = readPngSize(png);
      must(size.width === 48 && size.height === 40, `output is ${size.width}x${size.height}, expected 48x40`);
      const status = await client.promptStatus(promptId);
      must(status.state === 'success', `status after completion is ${status.state}`);
      return `completed via ${res.via}`;
    });

    await check('an invalid graph is rejected with node errors naming the input', async () => {
      const graph = modelFreeGraph(`comfy-durable-contract/${filename}`, 48, 40, 'x');
      delete (graph.scale!.inputs as Record<string, unknown>).upscale_method;
      try {
        await client.submitPrompt({ graph, promptId: derivePromptId(['contract', run, 2]) });
      } catch (err) {
        must(err instanceof ComfyValidationError, `expected a validation error, got ${String(err)}`);
        const nodeErrors = (err as ComfyValidationError).nodeErrors;
        must(nodeErrors.scale, `node_errors does not name node "scale": ${JSON.stringify(nodeErrors)}`);
        return;
      }
      throw new Error('ComfyUI accepted a graph with a missing required input');
    });

    await check('an unknown prompt id reads as unknown (what a restart looks like)', async () => {
      const s = await client.promptStatus(derivePromptId(['contract', run, 'never-submitted']));
      must(s.state === 'unknown', `state is ${s.state}`);
    });

    await check('queue and targeted interrupt of a prompt that is not running are harmless', async () => {
      await client.getQueue();
      await client.interrupt(derivePromptId(['contract', run, 'not-running']));
    });
  } finally {
    await client.close();
  }
  return results;
}

/** A minimal request of the profile's first kind; LoadImage files are not checked by validation. */
function sampleRequest(profile: ModelProfile): RenderRequest {
  const kind = profile.kinds[0] ?? 'txt2img';
  const ref = { sha256: '0'.repeat(64), size: 1, mime: 'image/png', width: 64, height: 64 };
  const d = profile.defaults;
  return {
    kind,
    model: profile.id,
    prompt: 'contract',
    negativePrompt: '',
    seed: 1,
    steps: d.steps,
    cfg: d.cfg,
    ...(d.guidance !== undefined ? { guidance: d.guidance } : {}),
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: d.width,
    height: d.height,
    batchSize: 1,
    nIter: 1,
    denoise: kind === 'img2img' ? 0.5 : 1,
    ...(kind === 'img2img' ? { initImage: ref } : {}),
    extraImages: kind === 'edit' ? [ref] : [],
    report: { samplerName: d.sampler, scheduler: d.scheduler, requestedWidth: d.width, requestedHeight: d.height },
    ...(kind === 'video' ? { video: defaultVideoSpec(profile) } : {}),
  };
}
