/**
 * What happened to a render and to each of its outputs, read from its result (`RenderResult`): completed;
 * partial after an interrupt or a skip (with the sampling step reached); blank (an image of one colour — a
 * black one is what a VAE producing NaNs decodes to). Pure and shared: the workflow tags the render with it
 * (search attribute `RenderOutcome`), the worker counts it, operators (`renders list/show`, `GET /renders…`,
 * the gallery) show it, and every route that answers with images warns in its own shape. Results recorded
 * before outcomes existed read the same way: everything here derives from fields renders always returned.
 */
import { isImageRender, type BlobRef, type PartialItem, type RenderRequest, type RenderResult } from './render.ts';

/** The headline of a closed render that returned: the worst of what happened to its outputs. */
export type ResultOutcome = 'completed' | 'partial' | 'blank';

/** What happened to one output. */
export interface OutputOutcome {
  index: number;
  /** The render item (batch position) it belongs to, when known. */
  item?: number;
  outcome: 'completed' | 'partial';
  /** Why a partial output stopped early. */
  stoppedBy?: 'interrupt' | 'skip';
  /** Sampling steps done of the total when it stopped (ComfyUI's progress). */
  step?: number;
  steps?: number;
  /** One colour: `black` (NaNs in the VAE) or `uniform`. */
  blank?: BlobRef['blank'];
}

export interface RenderOutcomeView {
  outcome: ResultOutcome;
  /** `/sdapi/v1/interrupt` ended the render early. */
  interrupted?: boolean;
  /** Items `/sdapi/v1/skip` ended early. */
  skipped?: number[];
  /** Items that answer with a partial image, with the step each reached. */
  partial?: PartialItem[];
  /** Indexes of blank outputs. */
  blank?: number[];
  /** One line for people: `partial: interrupted at step 7/20 (item 0)`, `blank: output 1 is black (NaN)`. */
  summary: string;
}

/** Keywords of the `RenderOutcome` search attribute: the headline first, then what made it (filters match any). */
export function outcomeTags(result: Pick<RenderResult, 'outputs' | 'interrupted' | 'skipped' | 'partial'>): string[] {
  const v = outcomeOf(result);
  const tags: string[] = [v.outcome];
  if (v.outcome !== 'partial' && (v.interrupted || v.skipped || v.partial)) tags.push('partial');
  if (v.interrupted) tags.push('interrupted');
  if (v.skipped) tags.push('skipped');
  if (v.outcome !== 'blank' && v.blank) tags.push('blank');
  return tags;
}

/** The render's outcome from its result. */
export function outcomeOf(result: Pick<RenderResult, 'outputs' | 'interrupted' | 'skipped' | 'partial'>): RenderOutcomeView {
  const blank = (result.outputs ?? []).flatMap((o, i) => (o.blank ? [i] : []));
  const skipped = result.skipped && result.skipped.length > 0 ? result.skipped : undefined;
  const partial = result.partial && result.partial.length > 0 ? result.partial : undefined;
  const stopped = result.interrupted === true || skipped !== undefined || partial !== undefined;
  const outcome: ResultOutcome = blank.length > 0 ? 'blank' : stopped ? 'partial' : 'completed';
  const parts: string[] = [];
  if (result.interrupted) parts.push(`interrupted${stepText(partial?.find((p) => !skipped?.includes(p.item)))}`);
  for (const item of skipped ?? []) parts.push(`item ${item} skipped${stepText(partial?.find((p) => p.item === item))}`);
  for (const i of blank) parts.push(`output ${i} is ${result.outputs[i]!.blank === 'black' ? 'black (NaN in the VAE)' : 'one uniform colour'}`);
  return {
    outcome,
    ...(result.interrupted ? { interrupted: true } : {}),
    ...(skipped ? { skipped } : {}),
    ...(partial ? { partial } : {}),
    ...(blank.length > 0 ? { blank } : {}),
    summary: parts.length > 0 ? `${outcome}: ${parts.join('; ')}` : `completed: ${result.outputs?.length ?? 0} output(s)`,
  };
}

const stepText = (p: PartialItem | undefined): string =>
  p === undefined ? '' : p.step !== undefined && p.steps !== undefined ? ` at step ${p.step}/${p.steps}` : ' (step unknown)';

/**
 * Per output: its item (outputs are in item order, one per rendered item, whose seed is the render's seed +
 * the item), partial or completed, blank.
 */
export function outputOutcomes(result: Pick<RenderResult, 'outputs' | 'seeds' | 'skipped' | 'partial'> & { request?: { seed: number } }): OutputOutcome[] {
  const oneEach = result.seeds?.length === result.outputs.length && result.request !== undefined;
  return result.outputs.map((o, index) => {
    const item = oneEach ? result.seeds[index]! - result.request!.seed : undefined;
    const p = item !== undefined ? result.partial?.find((x) => x.item === item) : undefined;
    const view: OutputOutcome = { index, outcome: p ? 'partial' : 'completed' };
    if (item !== undefined) view.item = item;
    if (p) {
      view.stoppedBy = result.skipped?.includes(p.item) ? 'skip' : 'interrupt';
      if (p.step !== undefined) view.step = p.step;
      if (p.steps !== undefined) view.steps = p.steps;
    }
    if (o.blank) view.blank = o.blank;
    return view;
  });
}

/** One warning per blank output, as the image routes return them. */
export function blankWarnings(outputs: readonly BlobRef[] | undefined, noun = 'image'): string[] {
  return (outputs ?? []).flatMap((o, i) =>
    o.blank === 'black'
      ? [
          `${noun} ${i} is uniformly black: the VAE most likely produced NaNs (A1111: "A tensor with all NaNs was produced in VAE"); try another seed, fewer steps or a different VAE`,
        ]
      : o.blank === 'uniform'
        ? [`${noun} ${i} is a single uniform colour: the render most likely failed numerically`]
        : [],
  );
}

/** One line per item that answers with a partial image, saying what that image is. */
export function partialWarnings(request: RenderRequest, result: Pick<RenderResult, 'skipped' | 'partial'> | undefined): string[] {
  // The final size: the hires pass's when there is one.
  const { width: w, height: h } = (isImageRender(request) && request.hires) || request;
  return (result?.partial ?? []).map((p) => {
    const how = result?.skipped?.includes(p.item) ? 'skipped' : 'interrupted';
    const at = p.step !== undefined && p.steps !== undefined ? ` after ${p.step}/${p.steps} sampling steps` : '';
    return `image ${p.item} is partial: ${how}${at}; it is the sampler's last preview (a low-resolution approximation of the latent) resized to ${w}x${h}, not a finished image`;
  });
}

/** What a client must know about the images it receives: partial ones, then blank ones. */
export function outcomeWarnings(request: RenderRequest, result: Partial<Pick<RenderResult, 'skipped' | 'partial' | 'outputs'>> | undefined): string[] {
  return [...partialWarnings(request, result), ...blankWarnings(result?.outputs)];
}
