/** Family → graph builder. A new family is one builder file plus one entry here. */
import type { ModelFamily } from '../profile.ts';
import type { FamilyBuilder } from './common.ts';
import { fluxBuilder } from './flux.ts';
import { fluxKontextBuilder } from './flux-kontext.ts';
import { qwenBuilder } from './qwen.ts';
import { qwenEditBuilder } from './qwen-edit.ts';
import { h3Builder } from './h3.ts';
import { wan22Builder } from './wan22.ts';

const BUILDERS: Record<ModelFamily, FamilyBuilder> = {
  flux: fluxBuilder,
  'flux-kontext': fluxKontextBuilder,
  qwen: qwenBuilder,
  'qwen-edit': qwenEditBuilder,
  wan22: wan22Builder,
  h3: h3Builder,
};

export function familyBuilder(family: ModelFamily): FamilyBuilder {
  return BUILDERS[family];
}

export { OUTPUT_NODE, type BuildInput, type FamilyBuilder } from './common.ts';
