/**
 * The A1111 lists that come from ComfyUI (LoRAs, upscalers, memory) and the routes A1111 has for features this
 * service does not have, answered honestly: empty lists, `null` for the refresh actions (clients call
 * `.json()` on them).
 */
import type { FastifyInstance } from 'fastify';
import { fileStem } from '../../request/upscalers.ts';
import { LATENT_MODES, PIXEL_UPSCALERS } from '../../request/upscalers.ts';
import type { ApiContext } from '../context.ts';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { emptyListSchema, latentModesSchema, lorasSchema, memorySchema, upscalersSchema } from './answer-schemas.ts';
import { nullAnswer } from '../openapi-shapes.ts';

/** `4x-UltraSharp.pth`, `RealESRGAN_x2plus` → 4, 2 (A1111 reports a scale per upscaler). */
function scaleOf(name: string): number | null {
  const m = /(?:^|[^0-9])([1-8])x|x([1-8])(?:[^0-9]|$)/i.exec(name);
  return m ? Number(m[1] ?? m[2]) : null;
}

const doc = (summary: string, answer: z.ZodType) => ({ schema: { summary, tags: ['A1111'], response: { 200: answer } } });

/** The lists A1111 has and this service has not: always empty. */
const EMPTY_LISTS: Record<string, string> = {
  hypernetworks: 'Hypernetworks (none)',
  'face-restorers': 'Face restorers (none)',
  'realesrgan-models': 'RealESRGAN models (none here: see upscalers)',
  'sd-modules': 'Modules (none selectable)',
  'script-info': 'Script info (none)',
  extensions: 'Extensions (none)',
};
/** Every refresh action refreshes the ComfyUI file lists this service caches. */
const REFRESH_ACTIONS: Record<string, string> = {
  'refresh-checkpoints': 'Refresh the model lists',
  'refresh-vae': 'Refresh the ComfyUI file lists (no VAE list here)',
  'refresh-loras': 'Refresh the LoRA list',
  'refresh-embeddings': 'Refresh the ComfyUI file lists (no embeddings here)',
  'unload-checkpoint': 'No-op (ComfyUI manages its models); refreshes the file lists',
  'reload-checkpoint': 'No-op (ComfyUI manages its models); refreshes the file lists',
};

export function registerA1111Catalog(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const upscaleModels = async (): Promise<string[]> => (ctx.catalog ? ctx.catalog.upscaleModels().catch(() => []) : []);
  const loras = async (): Promise<string[]> => (ctx.catalog ? ctx.catalog.loras().catch(() => []) : []);

  app.get('/sdapi/v1/upscalers', doc('Upscale methods and ComfyUI upscale models', upscalersSchema), async () => [
    ...Object.keys(PIXEL_UPSCALERS).map((name) => ({ name, model_name: null, model_path: null, model_url: null, scale: name === 'None' ? 4 : null })),
    ...(await upscaleModels()).map((file) => ({ name: fileStem(file), model_name: fileStem(file), model_path: file, model_url: null, scale: scaleOf(file) })),
  ]);
  app.get('/sdapi/v1/latent-upscale-modes', doc('Latent upscale modes for the hires fix', latentModesSchema), async () =>
    Object.keys(LATENT_MODES).map((name) => ({ name })),
  );
  app.get('/sdapi/v1/loras', doc("ComfyUI's LoRA files", lorasSchema), async () =>
    (await loras()).map((file) => ({ name: fileStem(file), alias: fileStem(file), path: file, metadata: {} })),
  );

  // A1111's shape: RAM of the machine, and CUDA memory of the GPU (here: ComfyUI's first device).
  app.get('/sdapi/v1/memory', doc("RAM and GPU memory from ComfyUI's /system_stats", memorySchema), async () => {
    try {
      if (!ctx.catalog) throw new Error('no ComfyUI backend configured');
      const stats = await ctx.catalog.systemStats();
      const total = stats.system.ram_total ?? 0;
      const free = stats.system.ram_free ?? 0;
      const dev = stats.devices[0];
      const vt = dev?.vram_total ?? 0;
      const vf = dev?.vram_free ?? 0;
      const tt = dev?.torch_vram_total ?? 0;
      const tf = dev?.torch_vram_free ?? 0;
      return {
        ram: { free, used: total - free, total },
        cuda: dev
          ? {
              system: { free: vf, used: vt - vf, total: vt },
              active: { current: tt - tf, peak: tt - tf },
              allocated: { current: tt - tf, peak: tt - tf },
              reserved: { current: tt, peak: tt },
              inactive: { current: tf, peak: tf },
              events: { retries: 0, oom: 0 },
            }
          : { error: 'ComfyUI reports no GPU device' },
      };
    } catch (err) {
      return { ram: { error: (err as Error).message }, cuda: { error: (err as Error).message } };
    }
  });

  for (const [route, summary] of Object.entries(EMPTY_LISTS)) {
    app.get(`/sdapi/v1/${route}`, doc(summary, emptyListSchema), async () => []);
  }
  for (const [route, summary] of Object.entries(REFRESH_ACTIONS)) {
    app.post(`/sdapi/v1/${route}`, doc(summary, nullAnswer), async () => {
      ctx.catalog?.refresh();
      return null;
    });
  }
}
