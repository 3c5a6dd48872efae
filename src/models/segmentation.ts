/**
 * The model files of background removal and text segmentation (the A1111 rembg and segment-anything routes),
 * by role, with the names ComfyUI's templates use: `backgroundRemoval` in models/background_removal (BiRefNet),
 * `sam3` in models/checkpoints (SAM3.1, model and text encoder in one file). `segmentationNeeds` reads them
 * against a live `/object_info` the way the profiles' files are read: `comfy-durable contract` reports a missing
 * one, and a request that needs it is refused with a 4xx naming it (src/api/a1111/segment-routes.ts).
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { missingModelFiles, missingNodeClasses } from '../comfyui/preflight.ts';
import type { SegmentMethod } from '../contracts/render.ts';
import { buildSegmentGraph } from './families/segment.ts';

export const SEGMENTATION_FILES = {
  backgroundRemoval: 'birefnet.safetensors',
  sam3: 'sam3.1_multiplex_fp16.safetensors',
} as const;

export type SegmentationRole = keyof typeof SEGMENTATION_FILES;

/** What each role is for, in the contract's lines and the 4xx answers. */
export const SEGMENTATION_USES: Readonly<Record<SegmentationRole, string>> = {
  backgroundRemoval: 'background removal (/rembg)',
  sam3: 'text segmentation (/sam/sam-predict)',
};

/** The method a role's file runs, with sample values (the graphs only need the file names right). */
export function segmentMethodOf(role: SegmentationRole): SegmentMethod {
  return role === 'backgroundRemoval'
    ? { kind: 'remove-background', model: SEGMENTATION_FILES.backgroundRemoval }
    : { kind: 'text', checkpoint: SEGMENTATION_FILES.sam3, text: 'contract', threshold: 0.3 };
}

/** Every graph a role submits (each output), as the service builds them. */
export function segmentationSampleGraphs(role: SegmentationRole): ComfyGraph[] {
  const source = { name: 'comfy-durable/contract.png', width: 64, height: 64 };
  return (['mask', 'cutout', 'blended'] as const).map((output) => buildSegmentGraph(segmentMethodOf(role), output, source, 'comfy-durable/contract'));
}

/** What a role lacks on the ComfyUI that answered `info`: node classes and files (with the loader input they go in). */
export interface SegmentationNeeds {
  role: SegmentationRole;
  use: string;
  missingNodes: string[];
  missingFiles: Array<{ file: string; where: string }>;
}

export function segmentationNeeds(info: ObjectInfo): SegmentationNeeds[] {
  return (Object.keys(SEGMENTATION_FILES) as SegmentationRole[]).map((role) => {
    const nodes = new Set<string>();
    const files = new Map<string, { file: string; where: string }>();
    for (const graph of segmentationSampleGraphs(role)) {
      for (const p of missingNodeClasses(graph, info)) nodes.add(p.classType ?? `(node ${p.nodeId} without class_type)`);
      for (const p of missingModelFiles(graph, info)) files.set(p.value as string, { file: p.value as string, where: `${p.classType}.${p.input}` });
    }
    return { role, use: SEGMENTATION_USES[role], missingNodes: [...nodes].sort(), missingFiles: [...files.values()] };
  });
}

/** Why `role` cannot run on that ComfyUI (undefined: it can): the missing files and node classes, named. */
export function segmentationUnavailable(needs: SegmentationNeeds): string | undefined {
  const parts = [
    ...needs.missingFiles.map((f) => `model file ${f.file} is missing (not in ${f.where})`),
    ...needs.missingNodes.map((c) => `node class ${c} is not installed`),
  ];
  return parts.length > 0 ? `${needs.use}: ${parts.join('; ')}` : undefined;
}
