/** Backends come from COMFYUI_URL: one ComfyUI each, with its own single-slot task queue. */
import type { Backend } from '../render/types.ts';

export function backendsFromUrls(urls: string[], taskQueue: string): Backend[] {
  return urls.map((url, i) => {
    const id = `comfyui-${i}`;
    return { id, url: url.replace(/\/+$/, ''), taskQueue: `${taskQueue}.${id}` };
  });
}
