/**
 * The end of every video graph: frames (and audio) → CreateVideo → SaveVideo as an H.264 MP4 under the
 * job's own prefix. SaveVideo's `format` is a COMFY_DYNAMICCOMBO_V3 on ComfyUI 0.33.0: the selected option's
 * nested inputs are sent as dot paths (`format.codec`), as recorded in ref/real-comfyui.
 */
import type { NodeLink } from '../../comfyui/graph.ts';
import { GraphBuilder, OUTPUT_NODE, type VideoBuildInput } from './common.ts';

export function createAndSaveVideo(g: GraphBuilder, input: VideoBuildInput, parts: { images: NodeLink; audio?: NodeLink }): void {
  const spec = input.request.video;
  const video = g.add('create_video', 'CreateVideo', 'Create video', {
    images: parts.images,
    fps: spec.fps,
    ...(parts.audio ? { audio: parts.audio } : {}),
  });
  g.add(OUTPUT_NODE, 'SaveVideo', 'Save video (H.264 MP4)', {
    video,
    filename_prefix: input.filenamePrefix,
    format: 'mp4',
    'format.codec': 'h264',
  });
}
