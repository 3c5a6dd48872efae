/**
 * Control units (ControlNet, image prompts) of a neutral request, resolved against the chosen model: a unit the
 * model cannot take is refused before any image is decoded or stored, naming the client's field for the unit;
 * what the model takes but does not apply (a step range on per-model patches) is said in the warnings.
 */
import type { BlobRef, ControlUnit } from '../contracts/render.ts';
import type { ModelProfile } from '../models/profile.ts';
import { controlStepRangeApplies, controlUnsupported } from '../models/families/controls.ts';
import { RequestError } from '../errors/request-error.ts';
import type { NeutralControl } from './neutral.ts';

/** Refuses the first unit `profile` cannot take; warns of step ranges it would not apply. */
export function checkControls(controls: readonly NeutralControl[], profile: ModelProfile, warnings: string[]): void {
  for (const { unit, names } of controls) {
    const why = controlUnsupported(profile, unit);
    if (why) throw new RequestError(400, names.unit, `${names.unit}: ${why}`);
    if (unit.kind === 'controlnet' && !controlStepRangeApplies(profile)) {
      if (unit.start !== 0) warnings.push(`${names.start}: not applied; ${profile.id} applies a control unit to every step`);
      if (unit.end !== 1) warnings.push(`${names.end}: not applied; ${profile.id} applies a control unit to every step`);
    }
  }
}

/** The units with their stored images, in order (`images[i]` is unit i's). */
export function controlUnits(controls: readonly NeutralControl[], images: readonly BlobRef[]): ControlUnit[] {
  return controls.map(({ unit }, i) => {
    const image = images[i];
    if (!image) throw new Error(`control unit ${i}: its image was not decoded`);
    return { ...unit, image };
  });
}
