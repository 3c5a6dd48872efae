/**
 * Sampler and scheduler names: A1111 (and Forge) names and aliases, stable-diffusion.cpp names and ComfyUI's
 * own names all map to ComfyUI. Names are matched case-insensitively with whitespace collapsed. Every name
 * A1111 offers runs: on ComfyUI's KSampler enums, on a custom sigma schedule (SamplerCustomAdvanced with a
 * scheduler node, see `SigmaSchedule`), or, where ComfyUI has no equivalent (PLMS, Restart, DDIM CFG++), on
 * the closest ComfyUI sampler, with the reason in `approx` so the client is told (info.warnings).
 */
import type { SigmaSchedule } from '../contracts/render.ts';
import { sigmaRange, type FamilySampling } from './families/sampling-facts.ts';

/** ComfyUI `KSampler.SAMPLERS` (v0.33 master; identical to v0.3.64 except the exp_heun_2_x0 pair). */
export const COMFY_SAMPLERS = [
  'euler',
  'euler_cfg_pp',
  'euler_ancestral',
  'euler_ancestral_cfg_pp',
  'heun',
  'heunpp2',
  'exp_heun_2_x0',
  'exp_heun_2_x0_sde',
  'dpm_2',
  'dpm_2_ancestral',
  'lms',
  'dpm_fast',
  'dpm_adaptive',
  'dpmpp_2s_ancestral',
  'dpmpp_2s_ancestral_cfg_pp',
  'dpmpp_sde',
  'dpmpp_sde_gpu',
  'dpmpp_2m',
  'dpmpp_2m_cfg_pp',
  'dpmpp_2m_sde',
  'dpmpp_2m_sde_gpu',
  'dpmpp_2m_sde_heun',
  'dpmpp_2m_sde_heun_gpu',
  'dpmpp_3m_sde',
  'dpmpp_3m_sde_gpu',
  'ddpm',
  'lcm',
  'ipndm',
  'ipndm_v',
  'deis',
  'res_multistep',
  'res_multistep_cfg_pp',
  'res_multistep_ancestral',
  'res_multistep_ancestral_cfg_pp',
  'gradient_estimation',
  'gradient_estimation_cfg_pp',
  'er_sde',
  'seeds_2',
  'seeds_3',
  'sa_solver',
  'sa_solver_pece',
  'ddim',
  'uni_pc',
  'uni_pc_bh2',
] as const;

/** ComfyUI `KSampler.SCHEDULERS`. */
export const COMFY_SCHEDULERS = ['simple', 'sgm_uniform', 'karras', 'exponential', 'ddim_uniform', 'beta', 'normal', 'linear_quadratic', 'kl_optimal'] as const;

interface A1111SamplerDef {
  name: string;
  aliases: string[];
  /** A1111's sampler options (stringified as A1111's pydantic v1 `dict[str, str]` does). */
  options: Record<string, string>;
  /** ComfyUI sampler. */
  comfy: string;
  /** Set when `comfy` is only the closest ComfyUI sampler: why, for info.warnings. */
  approx?: string;
}

const T = 'True';
/** A1111 v1.10 samplers in its own order, then Forge's additions. */
const A1111_SAMPLERS: A1111SamplerDef[] = [
  { name: 'DPM++ 2M', aliases: ['k_dpmpp_2m'], options: { scheduler: 'karras' }, comfy: 'dpmpp_2m' },
  { name: 'DPM++ SDE', aliases: ['k_dpmpp_sde'], options: { scheduler: 'karras', second_order: T, brownian_noise: T }, comfy: 'dpmpp_sde' },
  { name: 'DPM++ 2M SDE', aliases: ['k_dpmpp_2m_sde'], options: { scheduler: 'exponential', brownian_noise: T }, comfy: 'dpmpp_2m_sde' },
  {
    name: 'DPM++ 2M SDE Heun',
    aliases: ['k_dpmpp_2m_sde_heun'],
    options: { scheduler: 'exponential', brownian_noise: T, solver_type: 'heun' },
    comfy: 'dpmpp_2m_sde_heun',
  },
  { name: 'DPM++ 2S a', aliases: ['k_dpmpp_2s_a'], options: { scheduler: 'karras', uses_ensd: T, second_order: T }, comfy: 'dpmpp_2s_ancestral' },
  {
    name: 'DPM++ 3M SDE',
    aliases: ['k_dpmpp_3m_sde'],
    options: { scheduler: 'exponential', discard_next_to_last_sigma: T, brownian_noise: T },
    comfy: 'dpmpp_3m_sde',
  },
  { name: 'Euler a', aliases: ['k_euler_a', 'k_euler_ancestral'], options: { uses_ensd: T }, comfy: 'euler_ancestral' },
  { name: 'Euler', aliases: ['k_euler'], options: {}, comfy: 'euler' },
  { name: 'LMS', aliases: ['k_lms'], options: {}, comfy: 'lms' },
  { name: 'Heun', aliases: ['k_heun'], options: { second_order: T }, comfy: 'heun' },
  { name: 'DPM2', aliases: ['k_dpm_2'], options: { scheduler: 'karras', discard_next_to_last_sigma: T, second_order: T }, comfy: 'dpm_2' },
  {
    name: 'DPM2 a',
    aliases: ['k_dpm_2_a'],
    options: { scheduler: 'karras', discard_next_to_last_sigma: T, uses_ensd: T, second_order: T },
    comfy: 'dpm_2_ancestral',
  },
  { name: 'DPM fast', aliases: ['k_dpm_fast'], options: { uses_ensd: T }, comfy: 'dpm_fast' },
  { name: 'DPM adaptive', aliases: ['k_dpm_ad'], options: { uses_ensd: T }, comfy: 'dpm_adaptive' },
  // Restart, DDIM CFG++ and PLMS are A1111-only algorithms: the closest ComfyUI sampler runs, said in warnings.
  {
    name: 'Restart',
    aliases: ['restart'],
    options: { scheduler: 'karras', second_order: T },
    comfy: 'heun',
    approx: "ComfyUI has no Restart sampler; using heun (Restart's inner solver) without the restart noise jumps",
  },
  { name: 'DDIM', aliases: ['ddim'], options: { default_eta_is_0: T, uses_ensd: T }, comfy: 'ddim' },
  {
    name: 'DDIM CFG++',
    aliases: ['ddim_cfgpp'],
    options: {},
    comfy: 'euler_cfg_pp',
    approx: 'ComfyUI has no DDIM CFG++; using euler_cfg_pp (DDIM at eta 0 is the Euler step, with the same CFG++ guidance)',
  },
  {
    name: 'PLMS',
    aliases: ['plms'],
    options: {},
    comfy: 'ipndm',
    approx: "ComfyUI has no PLMS; using ipndm (ComfyUI's improved pseudo-linear multistep sampler)",
  },
  { name: 'UniPC', aliases: ['unipc'], options: {}, comfy: 'uni_pc' },
  { name: 'LCM', aliases: ['k_lcm'], options: {}, comfy: 'lcm' },
  { name: 'HeunPP2', aliases: [], options: {}, comfy: 'heunpp2' },
  { name: 'IPNDM', aliases: [], options: {}, comfy: 'ipndm' },
  { name: 'IPNDM_V', aliases: [], options: {}, comfy: 'ipndm_v' },
  { name: 'DEIS', aliases: [], options: {}, comfy: 'deis' },
  { name: 'DDPM', aliases: [], options: {}, comfy: 'ddpm' },
];

/**
 * stable-diffusion.cpp `sample_method` names. `default` means "the engine's default", i.e. the profile's.
 * `dpm++2mv2` (a modified DPM++ 2M), `ddim_trailing` and `tcd` have no ComfyUI core equivalent: closest.
 */
const SDCPP_SAMPLERS: Record<string, { comfy: string; approx?: string }> = {
  euler: { comfy: 'euler' },
  euler_a: { comfy: 'euler_ancestral' },
  heun: { comfy: 'heun' },
  dpm2: { comfy: 'dpm_2' },
  'dpm++2s_a': { comfy: 'dpmpp_2s_ancestral' },
  'dpm++2m': { comfy: 'dpmpp_2m' },
  'dpm++2mv2': { comfy: 'dpmpp_2m', approx: 'ComfyUI has no dpm++2mv2; using dpmpp_2m, the method it modifies' },
  ipndm: { comfy: 'ipndm' },
  ipndm_v: { comfy: 'ipndm_v' },
  lcm: { comfy: 'lcm' },
  ddim_trailing: { comfy: 'ddim', approx: 'ComfyUI has no ddim_trailing; using ddim on the chosen scheduler' },
  tcd: { comfy: 'lcm', approx: 'ComfyUI has no TCD sampler; using lcm, the consistency sampler it extends' },
};

/** Schedules that are no KSampler scheduler but a sigma node (SamplerCustomAdvanced). */
export type CustomScheduleKind = 'polyexponential' | 'align_your_steps' | 'align_your_steps_gits' | 'align_your_steps_11' | 'align_your_steps_32';

interface A1111SchedulerDef {
  name: string;
  label: string;
  aliases: string[] | null;
  default_rho: number;
  need_inner_model: boolean;
  /** ComfyUI scheduler; `automatic` = the model's default; `custom` = a sigma node (`custom` says which). */
  comfy: string;
  custom?: CustomScheduleKind;
  approx?: string;
  /** Further accepted spellings that A1111 does not list (sd.cpp, ComfyUI). */
  extra: string[];
}

/**
 * A1111 v1.10 schedulers (name, label, aliases, default_rho, need_inner_model as its API reports them).
 * Mapping decisions:
 * - `automatic` → the model profile's default (A1111 would use the sampler's preferred scheduler, e.g.
 *   Karras for DPM++ 2M, which suits SD1/SDXL but not flow-matching models like Flux and Qwen).
 * - `uniform` → ComfyUI `normal`: both space timesteps evenly over the model's own sigma table
 *   (A1111's `uniform` is `inner_model.get_sigmas(n)`; ComfyUI's `normal` is the same linspace over
 *   timesteps). sd.cpp's `discrete` is the same schedule.
 * - `ddim` → `ddim_uniform` (A1111 copied ComfyUI's ddim scheduler).
 * - `polyexponential` and the Align Your Steps family exist only as ComfyUI sigma nodes, not as KSampler
 *   schedulers: they run through SamplerCustomAdvanced (`sigmaScheduleFor`).
 * - Forge's `turbo` → `sgm_uniform` with a warning (SDTurboScheduler is for SD-Turbo models only).
 */
const A1111_SCHEDULERS: A1111SchedulerDef[] = [
  { name: 'automatic', label: 'Automatic', aliases: null, default_rho: -1, need_inner_model: false, comfy: 'automatic', extra: ['default'] },
  { name: 'uniform', label: 'Uniform', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'normal', extra: [] },
  { name: 'karras', label: 'Karras', aliases: null, default_rho: 7, need_inner_model: false, comfy: 'karras', extra: [] },
  { name: 'exponential', label: 'Exponential', aliases: null, default_rho: -1, need_inner_model: false, comfy: 'exponential', extra: [] },
  {
    name: 'polyexponential',
    label: 'Polyexponential',
    aliases: null,
    default_rho: 1,
    need_inner_model: false,
    comfy: 'custom',
    custom: 'polyexponential',
    extra: [],
  },
  { name: 'sgm_uniform', label: 'SGM Uniform', aliases: ['SGMUniform'], default_rho: -1, need_inner_model: true, comfy: 'sgm_uniform', extra: [] },
  { name: 'kl_optimal', label: 'KL Optimal', aliases: null, default_rho: -1, need_inner_model: false, comfy: 'kl_optimal', extra: [] },
  {
    name: 'align_your_steps',
    label: 'Align Your Steps',
    aliases: null,
    default_rho: -1,
    need_inner_model: false,
    comfy: 'custom',
    custom: 'align_your_steps',
    extra: ['ays'],
  },
  { name: 'simple', label: 'Simple', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'simple', extra: [] },
  { name: 'normal', label: 'Normal', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'normal', extra: ['discrete'] },
  { name: 'ddim', label: 'DDIM', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'ddim_uniform', extra: ['ddim_uniform'] },
  { name: 'beta', label: 'Beta', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'beta', extra: [] },
  // Forge's additions.
  {
    name: 'turbo',
    label: 'Turbo',
    aliases: null,
    default_rho: -1,
    need_inner_model: true,
    comfy: 'sgm_uniform',
    approx: "ComfyUI's SDTurboScheduler only suits SD-Turbo models; using sgm_uniform",
    extra: [],
  },
  {
    name: 'align_your_steps_GITS',
    label: 'Align Your Steps GITS',
    aliases: null,
    default_rho: -1,
    need_inner_model: false,
    comfy: 'custom',
    custom: 'align_your_steps_gits',
    extra: ['gits'],
  },
  {
    name: 'align_your_steps_11',
    label: 'Align Your Steps 11',
    aliases: null,
    default_rho: -1,
    need_inner_model: false,
    comfy: 'custom',
    custom: 'align_your_steps_11',
    extra: [],
  },
  {
    name: 'align_your_steps_32',
    label: 'Align Your Steps 32',
    aliases: null,
    default_rho: -1,
    need_inner_model: false,
    comfy: 'custom',
    custom: 'align_your_steps_32',
    extra: [],
  },
  // ComfyUI-only, listed so clients can pick it.
  { name: 'linear_quadratic', label: 'Linear Quadratic', aliases: null, default_rho: -1, need_inner_model: true, comfy: 'linear_quadratic', extra: [] },
];

/** sd.cpp scheduler spellings without a ComfyUI core equivalent: the closest one, and why. */
const SDCPP_SCHEDULERS: Record<string, { comfy: string; approx: string }> = {
  smoothstep: { comfy: 'simple', approx: 'ComfyUI has no smoothstep scheduler; using simple' },
  lcm: { comfy: 'sgm_uniform', approx: 'ComfyUI has no lcm scheduler; using sgm_uniform, the spacing LCM models use' },
};

const key = (name: string): string => name.trim().replace(/\s+/g, ' ').toLowerCase();

interface SamplerEntry {
  comfy: string;
  approx?: string;
}
const samplerTable = new Map<string, SamplerEntry>();
for (const s of COMFY_SAMPLERS) samplerTable.set(key(s), { comfy: s });
for (const [name, e] of Object.entries(SDCPP_SAMPLERS)) samplerTable.set(key(name), e);
for (const s of A1111_SAMPLERS) {
  for (const n of [s.name, ...s.aliases]) samplerTable.set(key(n), { comfy: s.comfy, ...(s.approx ? { approx: `${s.name}: ${s.approx}` } : {}) });
}

interface SchedulerEntry {
  comfy: string;
  custom?: CustomScheduleKind;
  approx?: string;
  label: string;
}
const schedulerTable = new Map<string, SchedulerEntry>();
for (const s of COMFY_SCHEDULERS) schedulerTable.set(key(s), { comfy: s, label: s });
for (const [name, e] of Object.entries(SDCPP_SCHEDULERS)) schedulerTable.set(key(name), { ...e, approx: `${name}: ${e.approx}`, label: name });
for (const s of A1111_SCHEDULERS) {
  const entry: SchedulerEntry = {
    comfy: s.comfy,
    label: s.label,
    ...(s.custom ? { custom: s.custom } : {}),
    ...(s.approx ? { approx: `${s.label}: ${s.approx}` } : {}),
  };
  for (const n of [s.name, s.label, ...(s.aliases ?? []), ...s.extra]) schedulerTable.set(key(n), entry);
}

/**
 * Result of a name lookup. `comfy: null` = "the model's default" (A1111 `automatic`, sd.cpp `default`).
 * `approx`: the name has no ComfyUI equivalent and `comfy` is the closest (the text says why). Schedulers:
 * `custom` = a sigma node schedule (`comfy` is then null: the KSampler scheduler stays the model's).
 */
export type NameLookup = { status: 'ok'; comfy: string | null; approx?: string; custom?: CustomScheduleKind; label?: string } | { status: 'unknown' };

export function lookupSampler(name: string): NameLookup {
  const k = key(name);
  if (k === 'default' || k === 'automatic') return { status: 'ok', comfy: null };
  const e = samplerTable.get(k);
  if (!e) return { status: 'unknown' };
  return { status: 'ok', comfy: e.comfy, ...(e.approx ? { approx: e.approx } : {}) };
}

export function lookupScheduler(name: string): NameLookup {
  const e = schedulerTable.get(key(name));
  if (!e) return { status: 'unknown' };
  if (e.comfy === 'automatic') return { status: 'ok', comfy: null };
  if (e.comfy === 'custom') return { status: 'ok', comfy: null, custom: e.custom!, label: e.label };
  return { status: 'ok', comfy: e.comfy, ...(e.approx ? { approx: e.approx } : {}) };
}

/**
 * The sigma node of a custom schedule on a model of this family (its sampling facts decide):
 * - Polyexponential: PolyexponentialScheduler over the family's sigma range (rho 1, A1111's default).
 * - The Align Your Steps family: the family's own Align Your Steps node (AlignYourStepsScheduler's SD1/SDXL/SVD
 *   tables, or OptimalStepsScheduler's fitted FLUX/Wan/Chroma steps, which need 3 steps or more); a family
 *   with none gets the simple scheduler and is told why, never another family's schedule silently.
 */
export function sigmaScheduleFor(
  kind: CustomScheduleKind,
  label: string,
  steps: number,
  family: { name: string; sampling: FamilySampling },
): { sigmas?: SigmaSchedule; approx?: string } {
  const { sampling } = family;
  if (kind === 'polyexponential') return { sigmas: { node: 'PolyexponentialScheduler', ...sigmaRange(sampling.prediction), rho: 1 } };
  const ays = sampling.alignYourSteps;
  if (!ays) {
    return {
      approx: `${label}: the ${family.name} family has no Align Your Steps schedule (ComfyUI has tables for SD1/SDXL/SVD and fitted steps for FLUX/Wan/Chroma); using the simple scheduler`,
    };
  }
  const variant =
    kind === 'align_your_steps' ? undefined : `${label} is rendered as ${ays.node === 'AlignYourStepsScheduler' ? 'Align Your Steps' : 'Optimal Steps'}`;
  const notes = [variant, sampling.alignYourStepsNote].filter((n): n is string => n !== undefined);
  if (ays.node === 'OptimalStepsScheduler' && steps < 3)
    return { approx: `${label}: OptimalStepsScheduler needs at least 3 steps; using the simple scheduler for ${steps}` };
  return { sigmas: { ...ays }, ...(notes.length > 0 ? { approx: `${label}: ${notes.join('; ')}` } : {}) };
}

/**
 * A1111's `"DPM++ 2M Karras"` convention: a trailing scheduler label (or alias/name) after a space names the
 * scheduler. Only split when the whole string is not itself a sampler name.
 */
export function splitSamplerScheduler(name: string): { sampler: string; scheduler?: string } {
  const trimmed = name.trim().replace(/\s+/g, ' ');
  if (samplerTable.has(key(trimmed))) return { sampler: trimmed };
  const suffixes = A1111_SCHEDULERS.flatMap((s) => [s.label, s.name, ...(s.aliases ?? [])]).sort((a, b) => b.length - a.length);
  const lower = trimmed.toLowerCase();
  for (const suffix of suffixes) {
    const tail = ` ${suffix.toLowerCase()}`;
    if (lower.endsWith(tail) && lower.length > tail.length) {
      return { sampler: trimmed.slice(0, trimmed.length - tail.length), scheduler: suffix };
    }
  }
  return { sampler: trimmed };
}

/** A1111 display name of a ComfyUI sampler (for `info` and infotexts), else the ComfyUI name. */
export function samplerLabel(comfy: string): string {
  return A1111_SAMPLERS.find((s) => s.comfy === comfy && !s.approx)?.name ?? comfy;
}

/** A1111 label of a ComfyUI scheduler ("Schedule type" in infotexts). `normal` → "Normal", not "Uniform". */
export function schedulerLabel(comfy: string): string {
  if (comfy === 'normal') return 'Normal';
  return A1111_SCHEDULERS.find((s) => s.comfy === comfy && !s.approx)?.label ?? comfy;
}

/** `GET /sdapi/v1/samplers` item. */
export interface A1111SamplerInfo {
  name: string;
  aliases: string[];
  options: Record<string, string>;
}

/** `GET /sdapi/v1/schedulers` item. */
export interface A1111SchedulerInfo {
  name: string;
  label: string;
  aliases: string[] | null;
  default_rho: number;
  need_inner_model: boolean;
}

/**
 * Every sampler this service can run: A1111 names first (with their aliases, the ComfyUI name and sd.cpp
 * spellings as further aliases), then ComfyUI-only samplers under their ComfyUI names.
 */
export function listSamplers(): A1111SamplerInfo[] {
  const out: A1111SamplerInfo[] = [];
  const covered = new Set<string>();
  for (const s of A1111_SAMPLERS) {
    const exact = !s.approx;
    if (exact) covered.add(s.comfy);
    const sdcpp = exact
      ? Object.entries(SDCPP_SAMPLERS)
          .filter(([, c]) => c.comfy === s.comfy && !c.approx)
          .map(([n]) => n)
      : [];
    const aliases = [...new Set([...s.aliases, ...(exact ? [s.comfy] : []), ...sdcpp])].filter((a) => a !== s.name);
    out.push({ name: s.name, aliases, options: { ...s.options } });
  }
  for (const c of COMFY_SAMPLERS) if (!covered.has(c)) out.push({ name: c, aliases: [], options: {} });
  return out;
}

/** Every scheduler A1111 and Forge list (all of them run), then ComfyUI's own. */
export function listSchedulers(): A1111SchedulerInfo[] {
  return A1111_SCHEDULERS.map((s) => ({
    name: s.name,
    label: s.label,
    aliases: s.aliases ? [...s.aliases] : null,
    default_rho: s.default_rho,
    need_inner_model: s.need_inner_model,
  }));
}

/** Names listed in "unknown sampler" errors. */
export function validSamplerNames(): string[] {
  return listSamplers().map((s) => s.name);
}

export function validSchedulerNames(): string[] {
  return listSchedulers().map((s) => s.name);
}

export function isComfySampler(name: string): boolean {
  return (COMFY_SAMPLERS as readonly string[]).includes(name);
}

export function isComfyScheduler(name: string): boolean {
  return (COMFY_SCHEDULERS as readonly string[]).includes(name);
}
