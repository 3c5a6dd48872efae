/**
 * What an engine is: the strategy that renders a model's diffusion model. A profile's `engine` names one
 * (absent: `comfyui`); each engine is a folder `engines/<id>/index.ts` default-exporting a ModelEngine,
 * found by listing the folder (engines/index.ts). Everything that differs between engines is here: the
 * diffusion model's loader, the LoRA loader, the engine's section of the overrides file, what a ComfyUI must
 * have for it (the contract) and what to tell the operator when its custom nodes are missing or fail.
 * Nothing else in a graph depends on the engine: requests, prompt ids, previews and history are unchanged.
 */
import type { z } from 'zod';
import type { CustomNodePackage } from '../../comfyui/plugins.ts';
import type { ObjectInfo } from '../../comfyui/object-info.ts';
import type { InputValue, NodeLink } from '../../comfyui/graph.ts';
import type { LoraUse } from '../../contracts/render.ts';
import type { ModelProfile } from '../profile.ts';

/** What the builders hand in (GraphBuilder's shape; named here so engines import no builder code). */
export interface NodeAdder {
  add(id: string, classType: string, title: string, inputs: Record<string, InputValue>): NodeLink;
}

/** A model file a ComfyUI lacks, and where it was looked for. */
export interface FileNeed {
  file: string;
  where: string;
}

export interface ModelEngine {
  /** The id a profile's `engine` names; also its folder's name and its overrides-file key. */
  readonly id: string;
  /** Why this engine cannot render `profile` (e.g. it has no executor for the family); undefined when it can. */
  cannotRun(profile: ModelProfile): string | undefined;
  /** The model files by role this engine loads for `profile`. */
  files(profile: ModelProfile): Readonly<Record<string, string>>;
  /** The diffusion model `file` as node id `unet`; returns its MODEL output. */
  loadUnet(g: NodeAdder, profile: ModelProfile, file: string): NodeLink;
  /** `<lora:name:weight>` tags as a chain of nodes after the loaders, in the prompt's order. */
  applyLoras(g: NodeAdder, profile: ModelProfile, loras: readonly LoraUse[], model: NodeLink, clip: NodeLink): { model: NodeLink; clip: NodeLink };
  /** The engine's section of the overrides file (key: its id); absent when operators have nothing to set. */
  readonly overrides?: EngineOverrides;
  /** What `/object_info` must have for the models on this engine (the contract command, the front's model lists). */
  readonly contract: EngineContract;
  /** Custom-node packages its graphs use: the ComfyUI client names them when their nodes are missing or fail. */
  readonly plugins: readonly CustomNodePackage[];
}

/** An engine's section of the overrides file (`MODELS_CONFIG`), checked at start. */
export interface EngineOverrides<T = unknown> {
  /** Its shape under `"<profile id>": { "<engine id>": ... }`. */
  readonly schema: z.ZodType<T>;
  /** The profile's fields this section changes, the section laid over the built-in values. */
  apply(base: ModelProfile, section: T | undefined): Partial<ModelProfile>;
  /** Throws an Error naming `<source>: <id>.<engine id>.<path>` for a setting the engine would refuse; `roles`: the family's file roles. */
  check(source: string, base: ModelProfile, section: T, roles: readonly string[]): void;
}

export interface EngineContract {
  /**
   * The engine's own custom nodes: when models run on it and none of `nodes` is installed, the contract says
   * the package is absent or failed to import (one line, not one per node). Absent: it needs no plugin.
   */
  readonly plugin?: { package: CustomNodePackage; nodes: readonly string[] };
  /** Files `profile` needs on this engine that its graphs' loaders cannot show. */
  fileNeeds(profile: ModelProfile, info: ObjectInfo): FileNeed[];
}

export const isGguf = (file: string): boolean => file.toLowerCase().endsWith('.gguf');
