/**
 * The graph builder every family writes with (readable node ids, a `_meta.title` each) and the inputs a
 * family builds from. Apart from common.ts so the tweaks (LoRAs, hires fix, init latent) can use them
 * without common.ts and tweaks.ts importing each other.
 */
import type { ComfyGraph, InputValue, NodeLink } from '../../comfyui/graph.ts';
import type { ImageRender, ModelRender, VideoRender } from '../../contracts/render.ts';
import type { ModelProfile } from '../profile.ts';

/** What a family builds an item's graph from: an image family's request by default, a video family's `VideoBuildInput`. */
export interface BuildInput<R extends ModelRender = ImageRender> {
  profile: ModelProfile;
  request: R;
  /** Seed of this item (`request.seed + index`). */
  seed: number;
  /** Per-job SaveImage prefix, so ComfyUI's cache never skips writing a fresh file. */
  filenamePrefix: string;
  /**
   * LoadImage names (`subfolder/filename`) of the request's images, already uploaded. Video: `first` and
   * `last` are the first/last frame (Wan's start image is `first`), `refs` the H3 reference images; `controls`
   * the image of each `request.controls` unit, in the same order.
   */
  images: { init?: string; mask?: string; refs: readonly string[]; first?: string; last?: string; controls?: readonly string[] };
}

export type VideoBuildInput = BuildInput<VideoRender>;

export class GraphBuilder {
  private readonly nodes: ComfyGraph = {};

  /** Adds a node and returns a link to its first output. Ids are unique by construction of each family. */
  add(id: string, classType: string, title: string, inputs: Record<string, InputValue>): NodeLink {
    if (this.nodes[id]) throw new Error(`graph builder: duplicate node id ${id}`);
    this.nodes[id] = { class_type: classType, inputs, _meta: { title } };
    return [id, 0];
  }

  graph(): ComfyGraph {
    return this.nodes;
  }
}

export interface SampleParts {
  model: NodeLink;
  positive: NodeLink;
  negative: NodeLink;
  latent: NodeLink;
  vae: NodeLink;
}
