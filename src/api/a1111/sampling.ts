/**
 * Sampler, scheduler and guidance of an A1111 request, mapped to ComfyUI's names and the model's CFG mode
 * (split from normalize.ts).
 */
import type { ModelProfile } from '../../models/profile.ts';
import {
  type CustomScheduleKind,
  lookupSampler,
  lookupScheduler,
  samplerLabel,
  schedulerLabel,
  splitSamplerScheduler,
  validSamplerNames,
  validSchedulerNames,
} from '../../models/samplers.ts';
import { RequestError } from './errors.ts';
import { inRange, present } from './fields.ts';
import type { A1111Body } from './schema.ts';

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
  b: A1111Body,
  profile: ModelProfile,
  warnings: string[],
): { sampler: string; scheduler: string; custom?: { kind: CustomScheduleKind; label: string } } {
  let samplerName: string | undefined;
  let samplerField = 'sampler_name';
  if (present(b.sampler_name)) samplerName = b.sampler_name;
  else if (present(b.sample_method)) {
    samplerName = b.sample_method;
    samplerField = 'sample_method';
  } else if (typeof b.sampler_index === 'string' && present(b.sampler_index)) {
    samplerName = b.sampler_index;
    samplerField = 'sampler_index';
  } else if (typeof b.sampler_index === 'number') {
    warnings.push('sampler_index: a numeric sampler index is not supported; using the model default sampler');
  }

  let sampler = profile.defaults.sampler;
  let suffixScheduler: string | undefined;
  if (samplerName !== undefined) {
    const found = resolveSampler(samplerName, samplerField, warnings);
    if (found.comfy) sampler = found.comfy;
    suffixScheduler = found.scheduler;
  }

  let scheduler = profile.defaults.scheduler;
  const explicit = present(b.scheduler) ? b.scheduler : undefined;
  let schedulerName = explicit;
  let schedulerField = 'scheduler';
  if (suffixScheduler !== undefined) {
    // A1111 lets the scheduler named inside the sampler name win over the `scheduler` field.
    if (explicit !== undefined && lookupScheduler(explicit).status === 'ok') {
      const a = lookupScheduler(explicit);
      const s = lookupScheduler(suffixScheduler);
      if (a.status === 'ok' && s.status === 'ok' && a.comfy !== null && a.comfy !== s.comfy) {
        warnings.push(`scheduler: "${explicit}" overridden by the scheduler in sampler name "${samplerName}"`);
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
 * The hires fix's own sampler and scheduler (A1111 `hr_sampler_name`, `hr_scheduler`; "Use same sampler" /
 * "Use same scheduler" or absent = the first pass's). Checked like `sampler_name` and `scheduler`, with the
 * same suffix rule: a scheduler named inside `hr_sampler_name` ("DPM++ 2M Karras") wins over `hr_scheduler`.
 * Returns only what differs from the first pass, so a request that names nothing builds the same graph.
 */
export function chooseHiresSampler(
  b: A1111Body,
  first: { sampler: string; scheduler: string },
  warnings: string[],
): { sampler?: string; samplerLabel?: string; scheduler?: string; schedulerLabel?: string } {
  const named = (v: string | undefined, same: string): string | undefined => (present(v) && v !== same ? v : undefined);
  const samplerName = named(b.hr_sampler_name, 'Use same sampler');
  let sampler = first.sampler;
  let schedulerName = named(b.hr_scheduler, 'Use same scheduler');
  let schedulerField = 'hr_scheduler';
  if (samplerName !== undefined) {
    const found = resolveSampler(samplerName, 'hr_sampler_name', warnings);
    if (found.comfy) sampler = found.comfy;
    if (found.scheduler !== undefined) {
      schedulerName = found.scheduler;
      schedulerField = 'hr_sampler_name';
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

export function chooseGuidance(b: A1111Body, profile: ModelProfile, warnings: string[]): { cfg: number; guidance: number | undefined; negativePrompt: string } {
  let cfg: number;
  let negativePrompt = b.negative_prompt ?? '';
  if (profile.cfgMode === 'fixed-1') {
    cfg = 1;
    if (b.cfg_scale !== undefined && b.cfg_scale !== 1) {
      warnings.push(`cfg_scale: ${b.cfg_scale} ignored; ${profile.id} is guidance-distilled and runs at CFG 1`);
    }
    if (negativePrompt.trim() !== '') {
      warnings.push(`negative_prompt: ignored; ${profile.id} runs at CFG 1 and has no negative branch`);
    }
    negativePrompt = '';
  } else {
    cfg = inRange(b.cfg_scale ?? profile.defaults.cfg, 0, 100, 'cfg_scale');
  }
  let guidance: number | undefined;
  if (profile.defaults.guidance !== undefined) {
    guidance = inRange(b.distilled_cfg_scale ?? profile.defaults.guidance, 0, 100, 'distilled_cfg_scale');
  } else if (b.distilled_cfg_scale !== undefined) {
    warnings.push(`distilled_cfg_scale: ignored; ${profile.id} has no distilled guidance`);
  }
  return { cfg, guidance, negativePrompt };
}
