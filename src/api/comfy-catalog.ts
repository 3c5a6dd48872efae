/**
 * What the front asks ComfyUI directly, outside renders: the LoRA and upscale-model files its loaders list
 * (for `<lora:…>` tags, `/sdapi/v1/loras` and `/sdapi/v1/upscalers`) and `/system_stats` (for
 * `/sdapi/v1/memory`). Lists are cached briefly (clients call them at start-up and per render); the
 * `refresh-*` routes drop the cache. The first backend answers: every backend must have the same files.
 */
import type { NodeInfo } from '../comfyui/object-info.ts';
import { comboOptions } from '../comfyui/object-info.ts';
import type { SystemStats } from '../comfyui/schemas.ts';

export interface CatalogSource {
  objectInfo(cls: string): Promise<NodeInfo | undefined>;
  systemStats(): Promise<SystemStats>;
}

const CACHE_MS = 10_000;
const TIMEOUT_MS = 5_000;

function withTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`ComfyUI did not answer in ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export class ComfyCatalog {
  private cache = new Map<string, { at: number; value: Promise<string[]> }>();

  constructor(private readonly source: CatalogSource) {}

  /** File names ComfyUI's LoraLoader offers (subfolders included), e.g. `style/detail.safetensors`. */
  loras(): Promise<string[]> {
    return this.combo('LoraLoader', 'lora_name');
  }

  /** File names in ComfyUI's `upscale_models` folder. */
  upscaleModels(): Promise<string[]> {
    return this.combo('UpscaleModelLoader', 'model_name');
  }

  systemStats(): Promise<SystemStats> {
    return withTimeout(this.source.systemStats());
  }

  refresh(): void {
    this.cache.clear();
  }

  private combo(node: string, input: string): Promise<string[]> {
    const key = `${node}.${input}`;
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.value;
    const value = withTimeout(this.source.objectInfo(node)).then((info) => {
      // A ComfyUI without the node (old release, or it failed to import) has none of these files.
      const spec = info?.input.required?.[input] ?? info?.input.optional?.[input];
      return spec ? (comboOptions(spec) ?? []).map(String) : [];
    });
    this.cache.set(key, { at: Date.now(), value });
    value.catch(() => {
      if (this.cache.get(key)?.value === value) this.cache.delete(key);
    });
    return value;
  }
}
