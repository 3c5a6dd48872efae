/**
 * stable-diffusion.cpp's sd-server (the engine this service replaces) reads its sampling controls from a
 * `<sd_cpp_extra_args>{json}</sd_cpp_extra_args>` tag inside the OpenAI prompt, and clients written for it
 * send them there. The tag is taken out of the prompt and its native fields become the request's own
 * (`seed`, `negative_prompt`, `sample_params.sample_steps` → steps, `.sample_method` → sampler, `.scheduler`,
 * `.guidance.txt_cfg` → cfg_scale, `.guidance.distilled_guidance` → guidance, `strength`, `batch_count` → n,
 * `width`/`height` → size). A field the request body also sets keeps the body's value; native fields with no
 * equivalent are reported in warnings.
 */
import { RequestError } from '../../errors/request-error.ts';

const OPEN = '<sd_cpp_extra_args>';
const CLOSE = '</sd_cpp_extra_args>';

/** The prompt without its first tag, and the tag's JSON object (undefined: no tag). */
export function extractSdCppArgs(prompt: string): { prompt: string; args?: Record<string, unknown> } {
  const start = prompt.indexOf(OPEN);
  if (start === -1) return { prompt };
  const end = prompt.indexOf(CLOSE, start + OPEN.length);
  if (end === -1) throw new RequestError(400, 'prompt', `prompt: ${OPEN} without ${CLOSE}`);
  let args: unknown;
  try {
    args = JSON.parse(prompt.slice(start + OPEN.length, end));
  } catch (e) {
    throw new RequestError(400, 'prompt', `prompt: ${OPEN} is not valid JSON (${(e as Error).message})`);
  }
  if (!args || typeof args !== 'object' || Array.isArray(args)) throw new RequestError(400, 'prompt', `prompt: ${OPEN} must hold a JSON object`);
  const rest = `${prompt.slice(0, start)}${prompt.slice(end + CLOSE.length)}`.trim();
  return { prompt: rest, args: args as Record<string, unknown> };
}

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The request fields the tag's native ones stand for; everything else the tag holds, as warnings. */
export function sdCppFields(args: Record<string, unknown>, warnings: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const { seed, negative_prompt, strength, batch_count, width, height, sample_params, ...rest } = args;
  const sp = obj(sample_params);
  const { sample_steps, sample_method, scheduler, guidance, ...spRest } = sp;
  const g = obj(guidance);
  const { txt_cfg, distilled_guidance, ...gRest } = g;
  const put = (field: string, v: unknown): void => {
    if (v !== undefined && v !== null) out[field] = v;
  };
  put('seed', seed);
  put('negative_prompt', negative_prompt);
  put('strength', strength);
  put('n', batch_count);
  put('steps', sample_steps);
  put('sampler', sample_method);
  put('scheduler', scheduler);
  put('cfg_scale', txt_cfg);
  put('guidance', distilled_guidance);
  if (typeof width === 'number' && typeof height === 'number') out.size = `${width}x${height}`;
  const ignored = [
    ...Object.keys(rest),
    ...(width !== undefined && height === undefined ? ['width'] : []),
    ...(height !== undefined && width === undefined ? ['height'] : []),
    ...Object.keys(spRest).map((k) => `sample_params.${k}`),
    ...Object.keys(gRest).map((k) => `sample_params.guidance.${k}`),
  ];
  for (const k of ignored) warnings.push(`sd_cpp_extra_args.${k}: not applied by this service`);
  return out;
}

/**
 * The request's fields with a prompt tag's applied: the prompt without the tag, the tag's fields where the
 * body has none. Returns the body unchanged when its prompt has no tag.
 */
export function withSdCppArgs(raw: Record<string, unknown>, warnings: string[]): Record<string, unknown> {
  if (typeof raw.prompt !== 'string') return raw;
  const { prompt, args } = extractSdCppArgs(raw.prompt);
  if (!args) return raw;
  const fromTag = sdCppFields(args, warnings);
  const merged: Record<string, unknown> = { ...raw, prompt };
  for (const [k, v] of Object.entries(fromTag)) {
    if (merged[k] === undefined || merged[k] === null || merged[k] === '') merged[k] = v;
    else warnings.push(`sd_cpp_extra_args: ${k} not applied; the request's own ${k} wins`);
  }
  return merged;
}
