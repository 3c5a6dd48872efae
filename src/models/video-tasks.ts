/**
 * What the video API asks a model instead of knowing it: the tasks it renders and what each does with the
 * request's images (declared by its family), which models have a task of a kind (for error messages), and
 * how far along a job is when a node after the sampler reports progress.
 */
import { familyBuilder, type VideoTaskSpec } from './families/index.ts';
import type { ModelProfile } from './profile.ts';
import { getProfile, listVideoProfiles } from './registry.ts';

export type { VideoTaskSpec } from './families/index.ts';

/** The profile's tasks in its preference order, as its family describes them. */
export function videoTasksOf(profile: ModelProfile): VideoTaskSpec[] {
  const declared = familyBuilder(profile.family).video?.tasks ?? [];
  return (profile.video?.tasks ?? []).map((id) => {
    const spec = declared.find((t) => t.id === id);
    if (!spec) throw new Error(`model ${profile.id}: video task ${id} is not one its family renders`);
    return spec;
  });
}

/** `<model> <task>` for every video model with a task whose images are `images` (e.g. references). */
export function modelsWithTask(images: VideoTaskSpec['images'], filter: (t: VideoTaskSpec) => boolean = () => true): string[] {
  return listVideoProfiles().flatMap((p) =>
    videoTasksOf(p)
      .filter((t) => t.images === images && filter(t))
      .map((t) => `${p.id} ${t.id}`),
  );
}

/** Progress (90..99) of node `node` of a render of `model` that runs after the sampler; undefined otherwise. */
export function progressAfterSampler(model: string, node: string): number | undefined {
  const profile = getProfile(model);
  if (!profile) return undefined;
  const stages = familyBuilder(profile.family).video?.progressAfterSampler;
  return stages && Object.hasOwn(stages, node) ? stages[node] : undefined;
}
