/**
 * What the front asks ComfyUI directly, outside renders: the LoRA and upscale-model files its loaders list
 * (for `<lora:…>` tags, `/sdapi/v1/loras` and `/sdapi/v1/upscalers`) and `/system_stats` (for
 * `/sdapi/v1/memory`). Lists are cached briefly (clients call them at start-up and per render); the
 * `refresh-*` routes drop the cache. The first backend answers: every backend must have the same files.
 */
import type { NodeInfo, ObjectInfo } from '../comfyui/object-info.ts';
import { comboOptions } from '../comfyui/object-info.ts';
import type { SystemStats } from '../comfyui/schemas.ts';
import { profileNeeds, unusableReason } from '../models/availability.ts';
import { disabledModels, listProfiles } from '../models/registry.ts';
import { segmentationNeeds, type SegmentationNeeds } from '../models/segmentation.ts';
import { livePreprocessors, type PreprocessorNode } from '../models/preprocessors.ts';

export interface CatalogSource {
  objectInfo(cls: string): Promise<NodeInfo | undefined>;
  /** The whole `/object_info` (for which models this ComfyUI can render). */
  allObjectInfo?(): Promise<ObjectInfo>;
  systemStats(): Promise<SystemStats>;
}

/** Which models the ComfyUI can render, as the model lists and `/health` show it. */
export interface ModelAvailability {
  /** False when ComfyUI did not answer: nothing is hidden then (a render waits for ComfyUI anyway). */
  checked: boolean;
  /** Served models that lack a node class or a model file there, with why. */
  unusable: Array<{ id: string; reason: string }>;
  /** Models MODELS_CONFIG switches off. */
  switchedOff: string[];
  error?: string;
}

const CACHE_MS = 10_000;
const TIMEOUT_MS = 5_000;
/** `/object_info` is megabytes and model files change rarely: read it at most this often for the model lists. */
const AVAILABILITY_CACHE_MS = 60_000;
/** The whole `/object_info` takes seconds on a ComfyUI with many custom nodes. */
const OBJECT_INFO_TIMEOUT_MS = 15_000;

function withTimeout<T>(p: Promise<T>, ms = TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`ComfyUI did not answer in ${ms} ms`)), ms);
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
    this.availability = undefined;
    this.infoCache = undefined;
  }

  private infoCache: { at: number; value: Promise<ObjectInfo | undefined> } | undefined;

  /** The whole `/object_info`, cached like `models()`; undefined when ComfyUI could not be asked (not kept). */
  private wholeInfo(): Promise<ObjectInfo | undefined> {
    const hit = this.infoCache;
    if (hit && Date.now() - hit.at < AVAILABILITY_CACHE_MS) return hit.value;
    if (!this.source.allObjectInfo) return Promise.resolve(undefined);
    const value = withTimeout(this.source.allObjectInfo(), OBJECT_INFO_TIMEOUT_MS).then(
      (info) => info,
      () => undefined,
    );
    this.infoCache = { at: Date.now(), value };
    void value.then((v) => {
      if (v === undefined && this.infoCache?.value === value) this.infoCache = undefined;
    });
    return value;
  }

  /**
   * What background removal and text segmentation lack on this ComfyUI (src/models/segmentation.ts); undefined
   * when ComfyUI could not be asked (a request then goes ahead and ComfyUI validates it).
   */
  async segmentation(): Promise<SegmentationNeeds[] | undefined> {
    const info = await this.wholeInfo();
    return info ? segmentationNeeds(info) : undefined;
  }

  /** The late-bound ControlNet preprocessor nodes this ComfyUI has (src/models/preprocessors.ts); [] when it could not be asked. */
  async preprocessors(): Promise<PreprocessorNode[]> {
    const info = await this.wholeInfo();
    return info ? livePreprocessors(info) : [];
  }

  private availability: { at: number; value: Promise<ModelAvailability> } | undefined;

  /**
   * The models this ComfyUI lacks something for (the contract's check, src/models/availability.ts), cached
   * for a minute. ComfyUI not answering hides nothing: the lists then show every served model.
   */
  models(): Promise<ModelAvailability> {
    const hit = this.availability;
    if (hit && Date.now() - hit.at < AVAILABILITY_CACHE_MS) return hit.value;
    const switchedOff = disabledModels();
    if (!this.source.allObjectInfo) return Promise.resolve({ checked: false, unusable: [], switchedOff });
    const value = withTimeout(this.source.allObjectInfo(), OBJECT_INFO_TIMEOUT_MS).then(
      (info): ModelAvailability => {
        const unusable = profileNeeds(listProfiles(), info).flatMap((n) => {
          const reason = unusableReason(n);
          return reason ? [{ id: n.id, reason }] : [];
        });
        return { checked: true, unusable, switchedOff };
      },
      (err: unknown): ModelAvailability => ({ checked: false, unusable: [], switchedOff, error: (err as Error).message }),
    );
    // A failed read is not kept: the next list asks again.
    this.availability = { at: Date.now(), value };
    void value.then((v) => {
      if (!v.checked && this.availability?.value === value) this.availability = undefined;
    });
    return value;
  }

  /** Ids of the served models this ComfyUI cannot render (empty when it could not be asked). */
  async unusableModels(): Promise<Set<string>> {
    return new Set((await this.models()).unusable.map((u) => u.id));
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
