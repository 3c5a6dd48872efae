/**
 * The backends concern has one home, this folder: which ComfyUIs exist (here), their health (health.ts) and
 * what each one runs and last loaded (gpu-pool.ts). Activities, the worker and the API reach them only here.
 *
 * Backends come from COMFYUI_URL: one ComfyUI each. Every process gets the same full list (ids are positional,
 * so they must agree); GPU_BACKENDS picks the ones whose prompts this worker runs (in production one worker
 * per GPU box, next to its ComfyUI).
 */
import type { Backend } from '../contracts/render.ts';
import { trimTrailingSlashes } from '../text/trim.ts';

export function backendsFromUrls(urls: string[]): Backend[] {
  return urls.map((url, i) => ({ id: `comfyui-${i}`, url: trimTrailingSlashes(url) }));
}

/** The backends this worker serves prompts for: all by default, none for `none`, else the ids listed (unknown ids are an error). */
export function gpuBackends(all: Backend[], ids: string[] | undefined): Backend[] {
  if (!ids) return all;
  if (ids.length === 1 && ids[0] === 'none') return [];
  const unknown = ids.filter((id) => !all.some((b) => b.id === id));
  if (unknown.length > 0) {
    throw new Error(`GPU_BACKENDS names unknown backends ${unknown.join(', ')}; known: ${all.map((b) => `${b.id}=${b.url}`).join(', ')}`);
  }
  return all.filter((b) => ids.includes(b.id));
}
