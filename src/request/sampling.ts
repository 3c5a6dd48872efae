/**
 * Sampler, scheduler and guidance of a neutral request, mapped to ComfyUI's names and the model's CFG mode;
 * refusals and adjustments name the client's field.
 */
import type { ModelProfile } from '../models/profile.ts';
import {
  type CustomScheduleKind,
  lookupSampler,
  lookupScheduler,
  samplerLabel,
  schedulerLabel,
  splitSamplerScheduler,
  validSamplerNames,
  validSchedulerNames,
} from '../models/samplers.ts';
import { RequestError } from '../errors/request-error.ts';
import { inRange, present, type FieldNames } from './fields.ts';
import type { HiresAsk, NeutralImageRequest } from './neutral.ts';

/** ComfyUI's name for a sampler name (null: the model's default), and a scheduler named inside it; 400 naming `field` for an unknown name. */
function resolveSampler(name: string, field: string, warnings: string[]): { comfy: string | null; scheduler?: string } {
  const split = splitSamplerScheduler(name);
  const found = lookupSampler(split.sampler);
  if (found.status !== 'ok') {
    const valid = validSamplerNames();
    throw new RequestError(400, field, `${field}: "${name}" is not a known sampler; valid samplers: ${valid.join(', ')}`, { valid });
  }
  if (found.approx) warnings.push(`${field}: ${found.approx}`);
  return { comfy: found.comfy, ...(split.scheduler !== undefined ? { scheduler: split.scheduler } : {}) };
}

/** A scheduler choice: a KSampler scheduler (null: the model's default) or a sigma-node schedule. */
export interface SchedulerChoice {
  comfy: string | null;
  custom?: { kind: CustomScheduleKind; label: string };
}

/** ComfyUI's name for a scheduler name; 400 naming `field` for an unknown name. */
function resolveScheduler(name: string, field: string, warnings: string[]): SchedulerChoice {
  const found = lookupScheduler(name);
  if (found.status !== 'ok') {
    const valid = validSchedulerNames();
    throw new RequestError(400, field, `${field}: scheduler "${name}" is not a known scheduler; valid schedulers: ${valid.join(', ')}`, { valid });
  }
  if (found.approx) warnings.push(`${field}: ${found.approx}`);
  return { comfy: found.comfy, ...(found.custom ? { custom: { kind: found.custom, label: found.label ?? name } } : {}) };
}

export function chooseSampler(
  r: Pick<NeutralImageRequest, 'sampler' | 'scheduler' | 'names'>,
  profile: ModelProfile,
  warnings: string[],
): { sampler: string; scheduler: string; custom?: { kind: CustomScheduleKind; label: string } } {
  const samplerName = present(r.sampler) ? r.sampler : undefined;
  const samplerField = r.names.sampler;

  let sampler = profile.defaults.sampler;
  let suffixScheduler: string | undefined;
  if (samplerName !== undefined) {
    const found = resolveSampler(samplerName, samplerField, warnings);
    if (found.comfy) sampler = found.comfy;
    suffixScheduler = found.scheduler;
  }

  let scheduler = profile.defaults.scheduler;
  const explicit = present(r.scheduler) ? r.scheduler : undefined;
  let schedulerName = explicit;
  let schedulerField = r.names.scheduler;
  if (suffixScheduler !== undefined) {
    // A1111 lets the scheduler named inside the sampler name win over the `scheduler` field.
    if (explicit !== undefined && lookupScheduler(explicit).status === 'ok') {
      const a = lookupScheduler(explicit);
      const s = lookupScheduler(suffixScheduler);
      if (a.status === 'ok' && s.status === 'ok' && a.comfy !== null && a.comfy !== s.comfy) {
        warnings.push(`${r.names.scheduler}: "${explicit}" overridden by the scheduler in sampler name "${samplerName}"`);
      }
    }
    schedulerName = suffixScheduler;
    schedulerField = samplerField;
  }
  let custom: SchedulerChoice['custom'];
  if (schedulerName !== undefined) {
    const choice = resolveScheduler(schedulerName, schedulerField, warnings);
    if (choice.comfy) scheduler = choice.comfy;
    custom = choice.custom;
  }
  return { sampler, scheduler, ...(custom ? { custom } : {}) };
}

/**
 * The hires fix's own sampler and scheduler (absent = the first pass's). Checked like the first pass's, with
 * the same suffix rule: a scheduler named inside the sampler name ("DPM++ 2M Karras") wins over the scheduler.
 * Returns only what differs from the first pass, so a request that names nothing builds the same graph.
 */
export function chooseHiresSampler(
  h: HiresAsk,
  first: { sampler: string; scheduler: string },
  warnings: string[],
): { sampler?: string; samplerLabel?: string; scheduler?: string; schedulerLabel?: string } {
  const samplerName = present(h.sampler) ? h.sampler : undefined;
  let sampler = first.sampler;
  let schedulerName = present(h.scheduler) ? h.scheduler : undefined;
  let schedulerField = h.names.scheduler;
  if (samplerName !== undefined) {
    const found = resolveSampler(samplerName, h.names.sampler, warnings);
    if (found.comfy) sampler = found.comfy;
    if (found.scheduler !== undefined) {
      schedulerName = found.scheduler;
      schedulerField = h.names.sampler;
    }
  }
  let scheduler = first.scheduler;
  if (schedulerName !== undefined) {
    const choice = resolveScheduler(schedulerName, schedulerField, warnings);
    scheduler = choice.comfy ?? scheduler;
    if (choice.custom) {
      warnings.push(
        `${schedulerField}: "${choice.custom.label}" is not applied to the second pass (a sigma-node schedule); it uses the ${schedulerLabel(scheduler)} scheduler`,
      );
    }
  }
  return {
    ...(sampler !== first.sampler ? { sampler, samplerLabel: samplerLabel(sampler) } : {}),
    ...(scheduler !== first.scheduler ? { scheduler, schedulerLabel: schedulerLabel(scheduler) } : {}),
  };
}

export function chooseGuidance(
  r: Pick<NeutralImageRequest, 'cfg' | 'guidance' | 'negativePrompt'> & { names: Pick<FieldNames, 'cfg' | 'guidance' | 'negativePrompt'> },
  profile: ModelProfile,
  warnings: string[],
): { cfg: number; guidance: number | undefined; negativePrompt: string } {
  const { names } = r;
  let cfg: number;
  let negativePrompt = r.negativePrompt ?? '';
  if (profile.cfgMode === 'fixed-1') {
    cfg = 1;
    if (r.cfg !== undefined && r.cfg !== 1) {
      warnings.push(`${names.cfg}: ${r.cfg} ignored; ${profile.id} is guidance-distilled and runs at CFG 1`);
    }
    if (negativePrompt.trim() !== '') {
      warnings.push(`${names.negativePrompt}: ignored; ${profile.id} runs at CFG 1 and has no negative branch`);
    }
    negativePrompt = '';
  } else {
    cfg = inRange(r.cfg ?? profile.defaults.cfg, 0, 100, names.cfg);
  }
  let guidance: number | undefined;
  if (profile.defaults.guidance !== undefined) {
    guidance = inRange(r.guidance ?? profile.defaults.guidance, 0, 100, names.guidance);
  } else if (r.guidance !== undefined) {
    warnings.push(`${names.guidance}: ignored; ${profile.id} has no distilled guidance`);
  }
  return { cfg, guidance, negativePrompt };
}
