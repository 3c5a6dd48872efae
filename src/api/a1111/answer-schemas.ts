/**
 * What the A1111 routes answer, as zod schemas for `/openapi.json` (declared on the routes, not used to
 * serialize: route-schemas.ts). Loose objects: A1111 clients ignore keys they do not know, and so may a
 * reader of the document.
 */
import { z } from 'zod';

export const renderAnswerSchema = z
  .looseObject({
    images: z.array(z.string()).describe('PNG (or samples_format) images, raw base64, in order; empty with send_images: false'),
    parameters: z.record(z.string(), z.unknown()).describe('the request as resolved'),
    info: z.string().describe('JSON text: seeds, infotext per image, render_id, warnings'),
  })
  .describe('The images, the parameters and the info string');

export const extrasSingleAnswerSchema = z.looseObject({ html_info: z.string(), image: z.string().describe('base64') }).describe('The upscaled image');
export const extrasBatchAnswerSchema = z.looseObject({ html_info: z.string(), images: z.array(z.string()) }).describe('The upscaled images');

export const pngInfoBodySchema = z.looseObject({ image: z.string().describe('base64 image or data URL (PNG, JPEG, WebP)') });
export const pngInfoAnswerSchema = z
  .object({ info: z.string(), items: z.record(z.string(), z.string()), parameters: z.record(z.string(), z.string()) })
  .describe('The infotext the image carries and its parse');

export const sdModelsSchema = z
  .array(
    z.object({
      title: z.string(),
      model_name: z.string(),
      hash: z.null(),
      sha256: z.null(),
      filename: z.string(),
      config: z.null(),
    }),
  )
  .describe('Models (profiles) this service renders');

export const optionsSchema = z.record(z.string(), z.unknown()).describe('Current settings (sd_model_checkpoint, samples_format, …)');
export const optionsPatchSchema = z.record(z.string(), z.unknown()).describe('Settings to change: one key or the whole dict');

export const samplersSchema = z
  .array(z.looseObject({ name: z.string(), aliases: z.array(z.string()), options: z.record(z.string(), z.unknown()) }))
  .describe('Sampler names and aliases');
export const schedulersSchema = z
  .array(z.looseObject({ name: z.string(), label: z.string(), aliases: z.array(z.string()).nullable() }))
  .describe('Scheduler names');

export const progressQuerySchema = z.looseObject({
  // A repeated parameter arrives as a list: read as text by the route, never refused.
  skip_current_image: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('"true": leave the preview out'),
});
export const progressSchema = z
  .looseObject({
    progress: z.number(),
    eta_relative: z.number(),
    state: z.record(z.string(), z.unknown()),
    current_image: z.string().nullable().describe('base64 preview of the current image, when ComfyUI sends previews'),
    textinfo: z.string().nullable(),
  })
  .describe('Live progress of the render on the GPU (all zeros when idle)');

export const upscalersSchema = z
  .array(
    z.object({
      name: z.string(),
      model_name: z.string().nullable(),
      model_path: z.string().nullable(),
      model_url: z.null(),
      scale: z.number().nullable(),
    }),
  )
  .describe('Upscale methods and ComfyUI upscale models');
export const latentModesSchema = z.array(z.object({ name: z.string() })).describe('Latent upscale modes for the hires fix');
export const lorasSchema = z
  .array(z.object({ name: z.string(), alias: z.string(), path: z.string(), metadata: z.record(z.string(), z.unknown()) }))
  .describe("ComfyUI's LoRA files");
export const memorySchema = z
  .object({ ram: z.record(z.string(), z.unknown()), cuda: z.record(z.string(), z.unknown()) })
  .describe("RAM and GPU memory from ComfyUI's /system_stats (an error field when ComfyUI does not answer)");

export const emptyListSchema = z.array(z.unknown()).describe('Empty: this service has none');
