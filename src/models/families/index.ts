/** Family → graph builder. A new family is one builder file plus one entry here. */
import type { ModelFamily } from '../profile.ts';
import type { FamilyBuilder } from './common.ts';
import { fluxBuilder } from './flux.ts';
import { fluxKontextBuilder } from './flux-kontext.ts';
import { qwenBuilder } from './qwen.ts';
import { qwenEditBuilder } from './qwen-edit.ts';
import { h3Builder } from './h3.ts';
import { wan22Builder } from './wan22.ts';

const BUILDERS: ReadonlyMap<ModelFamily, FamilyBuilder> = new Map(
  [fluxBuilder, fluxKontextBuilder, qwenBuilder, qwenEditBuilder, wan22Builder, h3Builder].map((b) => [b.family, b]),
);

export function familyBuilder(family: ModelFamily): FamilyBuilder {
  const builder = BUILDERS.get(family);
  if (!builder) throw new Error(`unknown model family "${family}" (known: ${[...BUILDERS.keys()].join(', ')})`);
  return builder;
}

export { OUTPUT_NODE, type BuildInput, type FamilyBuilder } from './common.ts';
export type { VideoFamily, VideoTaskSpec } from './video-family.ts';
