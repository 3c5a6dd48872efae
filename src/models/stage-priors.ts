/**
 * What a model's silent stages (text encoding, the final decode) are expected to take before any render of it
 * measured them: its family's priors (families/common.ts `SilentStagePriors`). The progress of a first render
 * moves against these; undefined for a model this process does not know.
 */
import { familyBuilder } from './families/index.ts';
import type { SilentStagePriors } from './families/common.ts';
import { getProfile } from './registry.ts';

export type { SilentStagePriors } from './families/common.ts';

export function silentStagePriors(model: string): SilentStagePriors | undefined {
  const profile = getProfile(model);
  return profile ? familyBuilder(profile.family).silentStages : undefined;
}
