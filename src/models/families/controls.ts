/**
 * Control units (`request.controls`) as ComfyUI 0.33.0 core nodes, in the layouts recorded on a real server
 * (test/fixtures/real-comfyui/execution-controlnet-*.json, made with tools/tiny-models/):
 * - Flux: one union ControlNet (InstantX Union Pro layout: ControlNetLoader → SetUnionControlNetType →
 *   ControlNetApplyAdvanced with the VAE, which encodes the hint to a latent) per unit, chained on both
 *   conditionings; image prompts through Flux Redux (CLIPVisionEncode of the image → StyleModelApply onto the
 *   positive conditioning, the unit's weight as strength).
 * - Qwen-Image: DiffSynth model patches (ModelPatchLoader → QwenImageDiffsynthControlnet on the model), one
 *   patch file per control type; Qwen has no Redux, so image prompts are refused.
 * A profile declares the files as roles (`controlnet`, `redux`, `clipVision`, `diffsynthCanny`, ...), so the
 * contract check (src/cli/contract-profiles.ts) reports the ones a ComfyUI lacks.
 */
import type { NodeLink } from '../../comfyui/graph.ts';
import {
  UNION_CONTROL_TYPES,
  type ControlNetUnit,
  type ControlPreprocessor,
  type ControlUnit,
  type ImagePromptUnit,
  type PreprocessorNodeUse,
  type UnionControlType,
} from '../../contracts/render.ts';
import type { ModelProfile } from '../profile.ts';
import { engineFiles, requireFile, type NodeAdder } from '../engines/index.ts';
import type { BuildInput, GraphBuilder } from './graph-builder.ts';

/** File roles of the Flux control nodes: the union ControlNet, the Redux style model and its SigLIP encoder. */
export const FLUX_CONTROL_ROLES = ['controlnet', 'redux', 'clipVision'] as const;

/** Qwen-Image DiffSynth model patches by control type (the files ComfyUI's Qwen ControlNet templates use). */
export const QWEN_PATCH_ROLES: Readonly<Partial<Record<UnionControlType, string>>> = {
  'canny/lineart/anime_lineart/mlsd': 'diffsynthCanny',
  depth: 'diffsynthDepth',
  repaint: 'diffsynthInpaint',
};

/** A unit the model cannot apply: the front answers 4xx with this message (it names the unit and why). */
export class UnsupportedControlError extends Error {}

function unitImage(input: BuildInput, index: number): string {
  const name = input.images.controls?.[index];
  if (!name) throw new Error(`control unit ${index}: no uploaded image`);
  return name;
}

/**
 * `image` through a preprocessor: as it is, Canny or inverted (ComfyUI core nodes), or a preprocessor node the live
 * ComfyUI offers (the image and its `resolution`; its other inputs keep their defaults). `id` names the node of
 * each preprocessor, `title` prefixes its title.
 */
export function preprocessImage(
  g: NodeAdder,
  image: NodeLink,
  spec: { preprocessor: ControlPreprocessor; canny?: { low: number; high: number }; node?: PreprocessorNodeUse },
  node: { id: (preprocessor: 'canny' | 'invert' | 'node') => string; title: string },
): NodeLink {
  if (spec.preprocessor === 'node') {
    const use = spec.node;
    if (!use) throw new Error('preprocessor "node" without its node');
    return g.add(node.id('node'), use.classType, `${node.title}: ${use.module}`, {
      image,
      ...(use.resolution !== undefined ? { resolution: use.resolution } : {}),
    });
  }
  if (spec.preprocessor === 'canny') {
    const { low, high } = spec.canny ?? { low: 0.4, high: 0.8 };
    return g.add(node.id('canny'), 'Canny', `${node.title}: canny`, { image, low_threshold: low, high_threshold: high });
  }
  if (spec.preprocessor === 'invert') return g.add(node.id('invert'), 'ImageInvert', `${node.title}: invert`, { image });
  return image;
}

/** The unit's hint image: as sent, through Canny, or inverted. */
function hintImage(g: GraphBuilder, input: BuildInput, unit: ControlNetUnit, index: number): NodeLink {
  const image = g.add(`control_image_${index}`, 'LoadImage', `Control image ${index}`, { image: unitImage(input, index) });
  return preprocessImage(g, image, unit, { id: (p) => `control_${p}_${index}`, title: `Preprocessor ${index}` });
}

function hasRole(profile: ModelProfile, role: string): boolean {
  return Boolean(engineFiles(profile)[role]);
}

/** A unit as asked, before its image is stored: what controlUnsupported needs to judge it. */
export type ControlUnitAsk = Omit<ControlNetUnit, 'image'> | Omit<ImagePromptUnit, 'image'>;

/** Why `profile` cannot apply `unit` (undefined: it can). The front checks this before it stores anything. */
export function controlUnsupported(profile: ModelProfile, unit: ControlUnitAsk): string | undefined {
  if (profile.family === 'flux') {
    if (unit.kind === 'image-prompt')
      return hasRole(profile, 'redux') && hasRole(profile, 'clipVision') ? undefined : `${profile.id} has no Redux files configured`;
    return hasRole(profile, 'controlnet') ? undefined : `${profile.id} has no ControlNet file configured`;
  }
  if (profile.family === 'qwen') {
    if (unit.kind === 'image-prompt') return `${profile.id} has no image-prompt model (Redux is Flux's)`;
    const role = qwenPatchRole(unit);
    return role && hasRole(profile, role) ? undefined : `${profile.id} has no DiffSynth model patch for control type "${unit.controlType}"`;
  }
  return `${profile.id} does not take control units`;
}

function assertSupported(profile: ModelProfile, unit: ControlUnit, index: number): void {
  const why = controlUnsupported(profile, unit);
  if (why) throw new UnsupportedControlError(`control unit ${index}: ${why}`);
}

/**
 * Flux units between the text conditioning and the sampler. Redux first (it appends image tokens to the
 * positive conditioning), then each ControlNet unit on both conditionings, chained in order.
 */
export function applyFluxControls(
  g: GraphBuilder,
  input: BuildInput,
  parts: { positive: NodeLink; negative: NodeLink; vae: NodeLink },
): { positive: NodeLink; negative: NodeLink } {
  const units = input.request.controls ?? [];
  let { positive, negative } = parts;
  units.forEach((unit, index) => assertSupported(input.profile, unit, index));
  units.forEach((unit, index) => {
    if (unit.kind !== 'image-prompt') return;
    const clipVision = g.graph().clip_vision
      ? (['clip_vision', 0] as NodeLink)
      : g.add('clip_vision', 'CLIPVisionLoader', 'Load CLIP vision (SigLIP)', { clip_name: requireFile(input.profile, 'clipVision') });
    const styleModel = g.graph().style_model
      ? (['style_model', 0] as NodeLink)
      : g.add('style_model', 'StyleModelLoader', 'Load Redux', { style_model_name: requireFile(input.profile, 'redux') });
    const image = g.add(`image_prompt_${index}`, 'LoadImage', `Image prompt ${index}`, { image: unitImage(input, index) });
    const encoded = g.add(`image_prompt_encode_${index}`, 'CLIPVisionEncode', `Encode image prompt ${index}`, {
      clip_vision: clipVision,
      image,
      crop: 'center',
    });
    positive = g.add(`image_prompt_apply_${index}`, 'StyleModelApply', `Apply Redux ${index}`, {
      conditioning: positive,
      style_model: styleModel,
      clip_vision_output: encoded,
      strength: unit.strength,
      strength_type: 'multiply',
    });
  });
  units.forEach((unit, index) => {
    if (unit.kind !== 'controlnet') return;
    const net = g.graph().controlnet
      ? (['controlnet', 0] as NodeLink)
      : g.add('controlnet', 'ControlNetLoader', 'Load ControlNet (union)', { control_net_name: requireFile(input.profile, 'controlnet') });
    const typed = g.add(`control_type_${index}`, 'SetUnionControlNetType', `Control type ${index}`, { control_net: net, type: unit.controlType });
    const applied = g.add(`control_apply_${index}`, 'ControlNetApplyAdvanced', `Apply ControlNet ${index}`, {
      positive,
      negative,
      control_net: typed,
      image: hintImage(g, input, unit, index),
      strength: unit.strength,
      start_percent: unit.start,
      end_percent: unit.end,
      vae: parts.vae,
    });
    positive = applied;
    negative = [applied[0], 1];
  });
  return { positive, negative };
}

/** Whether the profile applies a ControlNet unit's step range (start/end): Flux's ControlNetApplyAdvanced does, Qwen's patches do not. */
export function controlStepRangeApplies(profile: ModelProfile): boolean {
  return profile.family === 'flux';
}

/** A control file a profile has configured, and what it offers: the ControlNet or patch files' control types, or image prompts. */
export interface ControlFile {
  file: string;
  kind: 'controlnet' | 'image-prompt';
  controlTypes: readonly UnionControlType[];
}

/** The control files of `profile` (none for a family without control units). */
export function controlFilesOf(profile: ModelProfile): ControlFile[] {
  const files = engineFiles(profile);
  const out: ControlFile[] = [];
  if (profile.family === 'flux') {
    if (files.controlnet) out.push({ file: files.controlnet, kind: 'controlnet', controlTypes: UNION_CONTROL_TYPES });
    if (files.redux && files.clipVision) out.push({ file: files.redux, kind: 'image-prompt', controlTypes: [] });
  }
  if (profile.family === 'qwen') {
    for (const [type, role] of Object.entries(QWEN_PATCH_ROLES) as [UnionControlType, string][]) {
      const file = files[role];
      if (file) out.push({ file, kind: 'controlnet', controlTypes: [type] });
    }
  }
  return out;
}

function qwenPatchRole(unit: Omit<ControlNetUnit, 'image'>): string | undefined {
  // `auto` on a per-type patch: the preprocessor says what the hint is.
  const type = unit.controlType === 'auto' && unit.preprocessor === 'canny' ? 'canny/lineart/anime_lineart/mlsd' : unit.controlType;
  return QWEN_PATCH_ROLES[type];
}

/**
 * Qwen-Image units as DiffSynth model patches on the model, chained in order. The patch has a strength and no
 * step range: a unit's start/end are the front's to report as not applied.
 */
export function applyQwenControls(g: GraphBuilder, input: BuildInput, parts: { model: NodeLink; vae: NodeLink }): NodeLink {
  let model = parts.model;
  (input.request.controls ?? []).forEach((unit, index) => {
    assertSupported(input.profile, unit, index);
    if (unit.kind !== 'controlnet') return;
    const role = qwenPatchRole(unit) as string;
    const patch = g.add(`control_patch_${index}`, 'ModelPatchLoader', `Load model patch ${index}`, { name: requireFile(input.profile, role) });
    model = g.add(`control_apply_${index}`, 'QwenImageDiffsynthControlnet', `Apply DiffSynth ControlNet ${index}`, {
      model,
      model_patch: patch,
      vae: parts.vae,
      image: hintImage(g, input, unit, index),
      strength: unit.strength,
    });
  });
  return model;
}
