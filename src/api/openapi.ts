/**
 * `/openapi.json` and `/docs` (Swagger UI), as A1111's FastAPI serves them. The request bodies are generated
 * from the same zod schemas the routes validate with (zod's own JSON Schema export), so the document cannot
 * drift from what the front accepts.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { extrasBatchSchema, extrasSingleSchema } from './a1111/extras.ts';
import { img2imgSchema, txt2imgSchema } from './a1111/schema.ts';
import { openAiImagePaths } from './openai/openapi-paths.ts';

type JsonObject = Record<string, unknown>;

const body = (schema: z.ZodType): JsonObject => {
  const { $schema: _drop, ...json } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  return { required: true, content: { 'application/json': { schema: json } } };
};

const errorEnvelope = {
  type: 'object',
  properties: { error: { type: 'string' }, detail: { type: 'string' }, body: { type: 'string' }, errors: { type: 'string' }, field: { type: 'string' } },
};
const json = (description: string, schema: JsonObject = {}): JsonObject => ({ description, content: { 'application/json': { schema } } });
const errors = { '400': json('Invalid input (names the field)', errorEnvelope), '422': json('Type error (names the field)', errorEnvelope) };
const renderAnswer = json('The images (raw base64), the parameters and the info string', {
  type: 'object',
  properties: { images: { type: 'array', items: { type: 'string' } }, parameters: { type: 'object' }, info: { type: 'string' } },
});

const GETS: Record<string, string> = {
  '/sdapi/v1/sd-models': 'Models (profiles) this service renders',
  '/sdapi/v1/options': 'Current settings (sd_model_checkpoint, samples_format, ...)',
  '/sdapi/v1/samplers': 'Sampler names',
  '/sdapi/v1/schedulers': 'Scheduler names',
  '/sdapi/v1/upscalers': 'Upscaler methods and ComfyUI upscale models',
  '/sdapi/v1/latent-upscale-modes': 'Latent upscale modes for the hires fix',
  '/sdapi/v1/loras': "ComfyUI's LoRA files",
  '/sdapi/v1/memory': "RAM and GPU memory from ComfyUI's /system_stats",
  '/sdapi/v1/progress': 'Live progress of the render on the GPU',
  '/sdapi/v1/scripts': 'Scripts (img2img: sd upscale)',
  '/sdapi/v1/sd-vae': 'VAEs (none selectable)',
  '/sdapi/v1/sd-modules': 'Modules (none selectable)',
  '/sdapi/v1/prompt-styles': 'Prompt styles (none)',
  '/sdapi/v1/embeddings': 'Embeddings (none)',
  '/sdapi/v1/hypernetworks': 'Hypernetworks (none)',
  '/sdapi/v1/face-restorers': 'Face restorers (none)',
  '/sdapi/v1/realesrgan-models': 'RealESRGAN models (see upscalers)',
  '/sdapi/v1/script-info': 'Script info (none)',
  '/sdapi/v1/extensions': 'Extensions (none)',
  '/sdapi/v1/cmd-flags': 'Command-line flags (none)',
};
const ACTIONS: Record<string, string> = {
  '/sdapi/v1/interrupt': 'Stop the render on the GPU; its request answers 200 with the images finished so far',
  '/sdapi/v1/skip': 'End the current image of a batch; the render goes on with the next',
  '/sdapi/v1/refresh-checkpoints': 'Refresh the model lists',
  '/sdapi/v1/refresh-loras': 'Refresh the LoRA list',
  '/sdapi/v1/refresh-vae': 'Refresh (no-op)',
};

export function openApiDocument(): JsonObject {
  const paths: Record<string, JsonObject> = {
    '/sdapi/v1/txt2img': { post: { summary: 'Text to image (hires fix, LoRA tags)', requestBody: body(txt2imgSchema), responses: { '200': renderAnswer, ...errors } } },
    '/sdapi/v1/img2img': { post: { summary: 'Image to image, inpaint, and edits on instruction-edit models', requestBody: body(img2imgSchema), responses: { '200': renderAnswer, ...errors } } },
    '/sdapi/v1/extra-single-image': {
      post: { summary: 'Upscale one image through ComfyUI', requestBody: body(extrasSingleSchema), responses: { '200': json('html_info and image (base64)'), ...errors } },
    },
    '/sdapi/v1/extra-batch-images': {
      post: { summary: 'Upscale several images through ComfyUI', requestBody: body(extrasBatchSchema), responses: { '200': json('html_info and images (base64)'), ...errors } },
    },
    '/sdapi/v1/png-info': {
      post: {
        summary: 'Read the generation parameters an image carries',
        requestBody: body(z.object({ image: z.string() })),
        responses: { '200': json('info, items, parameters'), ...errors },
      },
    },
  };
  for (const [p, summary] of Object.entries(GETS)) paths[p] = { ...(paths[p] ?? {}), get: { summary, responses: { '200': json('A1111 shape') } } };
  paths['/sdapi/v1/options'] = {
    ...paths['/sdapi/v1/options'],
    post: { summary: 'Change settings (one key or the whole dict)', requestBody: body(z.record(z.string(), z.unknown())), responses: { '200': json('null'), ...errors } },
  };
  for (const [p, summary] of Object.entries(ACTIONS)) paths[p] = { post: { summary, responses: { '200': json('{} or null') } } };
  Object.assign(paths, openAiImagePaths());
  return {
    openapi: '3.1.0',
    info: { title: 'comfy-durable: AUTOMATIC1111 API on durable ComfyUI renders', version: '1.0.0' },
    paths,
  };
}

/** Paths these routes serve, open like the gallery (they hold no data). */
export const DOCS_PREFIX = '/docs';
export const OPENAPI_PATH = '/openapi.json';

export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  const document = openApiDocument();
  await app.register(swagger, { mode: 'static', specification: { document: document as never } });
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX });
  app.get(OPENAPI_PATH, async () => document);
}
