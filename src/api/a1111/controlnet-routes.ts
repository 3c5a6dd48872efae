/**
 * sd-webui-controlnet's routes (its scripts/api.py), in its shapes: `/controlnet/version`, `/model_list`,
 * `/module_list`, `/control_types`, `/settings`, and `POST /controlnet/detect` (the preprocessor as a durable
 * render, controlnet-detect.ts). The models are the control files the image profiles configure
 * (src/models/families/controls.ts), by file stem (the extension's names carry a ` [hash]` this service cannot
 * give); the modules are those the units take (controlnet.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { controlFilesOf, type ControlFile } from '../../models/families/controls.ts';
import { listImageProfiles } from '../../models/registry.ts';
import type { UnionControlType } from '../../contracts/render.ts';
import { fileStem } from '../../request/upscalers.ts';
import type { ApiContext } from '../context.ts';
import { resolveModel } from '../../models/registry.ts';
import { resolveLimits } from '../../request/limits.ts';
import { imageRouteLimits } from '../body-limits.ts';
import { outputImages, startAndAnswer } from '../render-wait.ts';
import { a1111Errors, RENDER_FAILURES } from '../openapi-shapes.ts';
import { renderHeadersSchema } from '../request-headers.ts';
import { specOnly } from '../route-schemas.ts';
import { detectBodySchema, normalizeDetectOffLoop } from './controlnet-detect.ts';
import { IMAGE_PROMPT_MODULES, isCoreModule, MAX_CONTROL_UNITS, PREPROCESSOR_MODULES } from './controlnet.ts';

/** The unit API this service takes: the extension's version 3 (pydantic-validated units, `image` as str / dict / pair). */
export const CONTROLNET_API_VERSION = 3;

/** The extension's label of each module where it differs from the name (`alias_names=true`). */
const MODULE_LABELS: Readonly<Record<string, string>> = { invert: 'invert (from white bg & black line)' };

interface Slider {
  name: string;
  value: number;
  min: number;
  max: number;
  step: number;
}
/** The extension's sliders of each module (resolution, then its own): what clients show and send back as processor_res / threshold_a / threshold_b. */
const RESOLUTION: Slider = { name: 'Resolution', value: 512, min: 64, max: 2048, step: 8 };
const MODULE_SLIDERS: Readonly<Record<string, readonly Slider[]>> = {
  none: [RESOLUTION],
  canny: [RESOLUTION, { name: 'Low Threshold', value: 100, min: 1, max: 255, step: 1 }, { name: 'High Threshold', value: 200, min: 1, max: 255, step: 1 }],
  invert: [],
};

/** The extension's control type tags (its UI tabs) this service can fill: the union type they select, and their modules. */
const CONTROL_TYPE_TAGS: ReadonlyArray<{ tag: string; type: UnionControlType | 'image-prompt'; modules: readonly string[] }> = [
  { tag: 'Canny', type: 'canny/lineart/anime_lineart/mlsd', modules: ['none', 'canny', 'invert'] },
  { tag: 'Depth', type: 'depth', modules: ['none'] },
  { tag: 'IP-Adapter', type: 'image-prompt', modules: IMAGE_PROMPT_MODULES },
  { tag: 'Inpaint', type: 'repaint', modules: ['none'] },
  { tag: 'Lineart', type: 'canny/lineart/anime_lineart/mlsd', modules: ['none', 'invert'] },
  { tag: 'MLSD', type: 'canny/lineart/anime_lineart/mlsd', modules: ['none', 'invert'] },
  { tag: 'NormalMap', type: 'normal', modules: ['none'] },
  { tag: 'OpenPose', type: 'openpose', modules: ['none'] },
  { tag: 'Scribble/Sketch', type: 'hed/pidi/scribble/ted', modules: ['none', 'invert'] },
  { tag: 'Segmentation', type: 'segment', modules: ['none'] },
  { tag: 'SoftEdge', type: 'hed/pidi/scribble/ted', modules: ['none'] },
  { tag: 'Tile/Blur', type: 'tile', modules: ['none'] },
];

const ALL_MODULES: readonly string[] = [...PREPROCESSOR_MODULES, ...IMAGE_PROMPT_MODULES];

const moduleName = (m: string, alias: boolean): string => (alias ? (MODULE_LABELS[m] ?? m) : m);

/** The control files of the usable image profiles, one entry per file stem. */
async function controlFiles(ctx: ApiContext): Promise<Array<ControlFile & { name: string }>> {
  const unusable = (await ctx.catalog?.unusableModels().catch(() => undefined)) ?? new Set<string>();
  const byName = new Map<string, ControlFile & { name: string }>();
  for (const profile of listImageProfiles()) {
    if (unusable.has(profile.id)) continue;
    for (const f of controlFilesOf(profile)) {
      const name = fileStem(f.file);
      const seen = byName.get(name);
      byName.set(name, seen ? { ...seen, controlTypes: [...new Set([...seen.controlTypes, ...f.controlTypes])] } : { ...f, name });
    }
  }
  return [...byName.values()];
}

/** The models a tag offers: image-prompt files for IP-Adapter, else the files (union or per-type) of its control type. */
function modelsFor(files: ReadonlyArray<ControlFile & { name: string }>, type: UnionControlType | 'image-prompt'): string[] {
  return files
    .filter((f) => (type === 'image-prompt' ? f.kind === 'image-prompt' : f.kind === 'controlnet' && f.controlTypes.includes(type)))
    .map((f) => f.name);
}

const boolQuery = z.preprocess((v) => (typeof v === 'string' ? ['true', '1', 'yes', 'on'].includes(v.toLowerCase()) : v), z.boolean().optional());

const versionSchema = z.object({ version: z.number().int() }).describe('The ControlNet unit API version');
const modelListSchema = z.object({ model_list: z.array(z.string()) }).describe('ControlNet and image-prompt models');
const sliderSchema = z.object({ name: z.string(), value: z.number(), min: z.number(), max: z.number(), step: z.number() });
const moduleListSchema = z
  .object({
    module_list: z.array(z.string()),
    module_detail: z.record(z.string(), z.object({ model_free: z.boolean(), sliders: z.array(sliderSchema) })),
  })
  .describe('Preprocessor modules and their sliders');
const controlTypesSchema = z
  .object({
    control_types: z.record(
      z.string(),
      z.object({ module_list: z.array(z.string()), model_list: z.array(z.string()), default_option: z.string(), default_model: z.string() }),
    ),
  })
  .describe('Modules and models per control type');
const detectAnswerSchema = z
  .looseObject({
    images: z.array(z.string()).describe('the preprocessed images, raw base64 PNG, in order'),
    info: z.string().describe('"Success", as the extension answers'),
    render_id: z.string(),
    warnings: z.array(z.string()).optional(),
  })
  .describe('The detected maps');
const settingsSchema = z.object({ control_net_unit_count: z.number().int() }).describe('Units per request');

const doc = (summary: string, answer: z.ZodType, querystring?: z.ZodType) => ({
  schema: { summary, tags: ['ControlNet'], ...(querystring ? { querystring } : {}), response: { 200: answer } },
});

export function registerControlNetRoutes(fastify: FastifyInstance, ctx: ApiContext): void {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get('/controlnet/version', doc('The ControlNet unit API version', versionSchema), async () => ({ version: CONTROLNET_API_VERSION }));

  app.get('/controlnet/model_list', doc('ControlNet and image-prompt models', modelListSchema, z.object({ update: boolQuery })), async () => ({
    model_list: (await controlFiles(ctx)).map((f) => f.name),
  }));

  app.get('/controlnet/module_list', doc('Preprocessor modules', moduleListSchema, z.object({ alias_names: boolQuery })), async (req) => {
    const alias = (req.query as { alias_names?: boolean }).alias_names === true;
    // The core modules, then the preprocessor nodes the live ComfyUI has (a resolution slider when the node takes one).
    const live = (await ctx.catalog?.preprocessors()) ?? [];
    const liveNames = live.map((n) => n.module).filter((m) => !ALL_MODULES.includes(m));
    const sliders = (m: string) => MODULE_SLIDERS[m] ?? (live.find((n) => n.module === m)?.resolution ? [RESOLUTION] : []);
    const names = [...ALL_MODULES, ...liveNames];
    return {
      module_list: names.map((m) => moduleName(m, alias)),
      module_detail: Object.fromEntries(names.map((m) => [moduleName(m, alias), { model_free: false, sliders: sliders(m) }])),
    };
  });

  app.get('/controlnet/control_types', doc('Modules and models per control type', controlTypesSchema), async () => {
    const files = await controlFiles(ctx);
    // As the extension: every tab lists `none` and `None`; a tab's default is its first real module and model.
    const entry = (modules: readonly string[], models: string[], defaultModule = modules.find((m) => m !== 'none') ?? 'none') => ({
      module_list: modules.includes('none') ? modules : ['none', ...modules],
      model_list: ['None', ...models],
      default_option: defaultModule,
      default_model: models[0] ?? 'None',
    });
    return {
      control_types: {
        All: entry(
          ALL_MODULES,
          files.map((f) => f.name),
          'none',
        ),
        ...Object.fromEntries(CONTROL_TYPE_TAGS.map(({ tag, type, modules }) => [tag, entry(modules, modelsFor(files, type))])),
      },
    };
  });

  app.get('/controlnet/settings', doc('ControlNet settings', settingsSchema), async () => ({ control_net_unit_count: MAX_CONTROL_UNITS }));

  app.post(
    '/controlnet/detect',
    {
      bodyLimit: imageRouteLimits(ctx.config).extraBatch,
      schema: {
        summary: 'Run a preprocessor (none, canny, invert, or a preprocessor node ComfyUI has) on images, as a durable render',
        tags: ['ControlNet'],
        headers: specOnly(renderHeadersSchema),
        body: specOnly(detectBodySchema),
        response: { 200: detectAnswerSchema, ...a1111Errors(RENDER_FAILURES) },
      },
    },
    async (req, reply) => {
      const defaultModel = resolveModel(ctx.options.getString('sd_model_checkpoint') ?? '')?.id ?? ctx.config.DEFAULT_MODEL;
      const module = (req.body as { controlnet_module?: unknown } | undefined)?.controlnet_module;
      const live = ctx.catalog && !isCoreModule(module) ? await ctx.catalog.preprocessors() : [];
      const normalized = await normalizeDetectOffLoop(req.body, { defaultModel, limits: resolveLimits(ctx.config), live });
      for (const w of normalized.warnings) req.log.info({ warning: w }, 'request adjusted');
      return startAndAnswer(ctx, req, reply, 'controlnet.detect', normalized, async ({ result, renderId }) => ({
        images: await outputImages(ctx, result),
        info: 'Success',
        render_id: renderId,
        ...(normalized.warnings.length > 0 ? { warnings: normalized.warnings } : {}),
      }));
    },
  );
}
