/**
 * What a family's models are as sampling sees them: facts the resolver and the builders read from the
 * family, never assume. A flow-matching family (Flux, Qwen, Wan) samples sigmas from 1 to 0 and starts from
 * a 16-channel latent; an SD1/SDXL-style family predicts noise over SD's 14.6 → 0.03 range from a 4-channel
 * latent, and has ComfyUI's own Align Your Steps tables.
 */

/** The sigma node that gives a family Align Your Steps: ComfyUI has tables for SD1/SDXL/SVD and fitted steps for FLUX/Wan/Chroma. */
export type AlignYourSteps =
  { node: 'AlignYourStepsScheduler'; modelType: 'SD1' | 'SDXL' | 'SVD' } | { node: 'OptimalStepsScheduler'; modelType: 'FLUX' | 'Wan' | 'Chroma' };

export interface FamilySampling {
  /** `flow`: flow matching (sigmas 1 → 0); `eps` / `v`: noise or velocity prediction over SD's sigma range. */
  prediction: 'flow' | 'eps' | 'v';
  /** The empty latent of a txt2img or edit render (image families): 16-channel SD3-style, or SD's 4-channel. */
  emptyLatent?: 'EmptySD3LatentImage' | 'EmptyLatentImage';
  /** Align Your Steps on this family; absent: it has none, and a request for it is told so (samplers.ts). */
  alignYourSteps?: AlignYourSteps;
  /** Said beside an Align Your Steps that is this family's nearest, not its own (e.g. Qwen on FLUX's fitted steps). */
  alignYourStepsNote?: string;
}

/** The sigma range of a prediction type: what Polyexponential spans. */
export function sigmaRange(prediction: FamilySampling['prediction']): { sigmaMax: number; sigmaMin: number } {
  // ComfyUI's flow models: timestep 1/1000 is the smallest non-zero sigma; SD's table: 14.614642 … 0.0291675.
  return prediction === 'flow' ? { sigmaMax: 1, sigmaMin: 0.001 } : { sigmaMax: 14.614642, sigmaMin: 0.0291675 };
}
