/**
 * What a video family declares beside its graph builder: the tasks it renders and the progress of the nodes
 * after its sampler. The API asks these (through the profile's family) instead of knowing the models.
 */

/**
 * A video task a family renders, as the API names it (`extra_params.task`), and what the request's images
 * are for it: nothing, frames placed at positions of the clip (0 = first, -1 = last), or references.
 */
export interface VideoTaskSpec {
  id: string;
  images: 'none' | 'frames' | 'references';
  /** `frames` only: where an image may go; a single position takes one image, sent as `input_reference`. */
  positions?: readonly (0 | -1)[];
}

/** What a video family declares beside its graph builder; the API reads it instead of knowing the models. */
export interface VideoFamily {
  tasks: readonly VideoTaskSpec[];
  /**
   * Progress of the nodes that run after the sampler, by node id: their own 0/1 progress must not take a
   * job back from 89 % to 1 %, so each maps to where it sits in the end of the graph.
   */
  progressAfterSampler: Readonly<Record<string, number>>;
}

/** The nodes `createAndSaveVideo` adds and the frame decode every video family names `decode`. */
export const VIDEO_END_PROGRESS = { decode: 90, create_video: 94, save: 96 } as const;
