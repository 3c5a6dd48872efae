/** Which video task a request asks for, whether its images fit that task, and what each image is (a frame or a reference). */
import type { DecodedImage } from '../../images/decode.ts';
import type { ModelProfile, VideoCapabilities } from '../../models/profile.ts';
import { modelsWithTask, videoTasksOf, type VideoTaskSpec } from '../../models/video-tasks.ts';
import type { BlobRef } from '../../contracts/render.ts';
import { RequestError } from '../../errors/request-error.ts';
import type { ImageInput } from './image-inputs.ts';
import type { ExtraParams } from './schema.ts';

/**
 * The task and what the images are, from what the model's family declares (`VideoTaskSpec`): a task named in
 * `extra_params.task` must be one of the model's; without one, no images means the first text-only task,
 * images mean the model's only image task, or its first-frames task when the images cannot be references.
 */
export function chooseTask(profile: ModelProfile, caps: VideoCapabilities, extra: ExtraParams, inputs: ImageInput[]): VideoTaskSpec {
  const refs = inputs.filter((i) => i.field.startsWith('input_references'));
  const tasks = videoTasksOf(profile);
  const imageTasks = tasks.filter((t) => t.images !== 'none');
  let task: VideoTaskSpec | undefined;
  if (extra.task !== undefined) {
    task = tasks.find((t) => t.id === extra.task);
    if (!task) {
      throw new RequestError(
        400,
        'extra_params.task',
        `extra_params.task: must be one of ${caps.tasks.join(', ')} for ${profile.id}, got ${JSON.stringify(extra.task)}`,
      );
    }
  } else if (inputs.length === 0 && extra.frame_indices === undefined) {
    task = tasks.find((t) => t.images === 'none') ?? tasks[0]!;
  } else if (imageTasks.length === 1) {
    task = imageTasks[0]!;
  } else if (refs.length > 0) {
    const kinds = imageTasks.map((t) => `"${t.id}": ${t.images === 'frames' ? 'first/last frames' : 'references'}`).join(', ');
    throw new RequestError(400, refs[0]!.field, `input_references: say what the images are with extra_params.task (${kinds})`);
  } else {
    task = imageTasks.find((t) => t.images === 'frames') ?? imageTasks[0]!;
  }
  if (!task) throw new Error(`model ${profile.id} declares no video task`);
  checkTaskImages(profile, task, tasks, extra, inputs, refs);
  return task;
}

function checkTaskImages(
  profile: ModelProfile,
  task: VideoTaskSpec,
  tasks: VideoTaskSpec[],
  extra: ExtraParams,
  inputs: ImageInput[],
  refs: ImageInput[],
): void {
  const framesTasks = tasks.filter((t) => t.images === 'frames' && (t.positions?.length ?? 0) > 1).map((t) => t.id);
  if (extra.frame_indices !== undefined && task.images !== 'frames') {
    throw new RequestError(
      400,
      'extra_params.frame_indices',
      `extra_params.frame_indices: only ${framesTasks.join(', ') || 'a first/last frame task'} places images as first/last frames (task is ${task.id})`,
    );
  }
  if (task.images === 'none') {
    if (inputs.length > 0) {
      const imageTasks = tasks.filter((t) => t.images !== 'none').map((t) => `"${t.id}"`);
      throw new RequestError(
        400,
        inputs[0]!.field,
        `${inputs[0]!.field}: ${task.id} takes no images${imageTasks.length ? ` (use extra_params.task ${imageTasks.join(' or ')})` : ''}`,
      );
    }
    return;
  }
  if (task.images === 'references') {
    if (inputs.length === 0) throw new RequestError(400, 'input_references', `input_references: ${task.id} needs at least one reference image`);
    if (inputs.length > profile.maxExtraImages) {
      throw new RequestError(
        400,
        inputs[profile.maxExtraImages]!.field,
        `input_references: ${task.id} takes at most ${profile.maxExtraImages} reference images`,
      );
    }
    return;
  }
  const positions = task.positions ?? [0];
  if (positions.length === 1) {
    // A single start image: sent as input_reference; reference images are another task's.
    if (refs.length > 0) {
      const others = modelsWithTask('references');
      throw new RequestError(
        400,
        refs[0]!.field,
        `input_references: ${profile.id} takes one start image in input_reference${others.length ? `; reference images are for ${others.join(', ')}` : ''}`,
      );
    }
    const bad = extra.frame_indices?.find((i) => !positions.includes(i as 0 | -1));
    if (bad !== undefined) {
      const others = modelsWithTask('frames', (t) => (t.positions?.length ?? 0) > 1);
      throw new RequestError(
        400,
        'extra_params.frame_indices',
        `extra_params.frame_indices: ${profile.id} takes only a first frame (input_reference)${others.length ? `; last frames are for ${others.join(', ')}` : ''}`,
      );
    }
  }
  if (inputs.length === 0)
    throw new RequestError(
      400,
      'input_reference',
      `input_reference: ${task.id} needs a ${positions.length > 1 ? 'first or last frame' : 'start'} image (input_reference${positions.length > 1 ? ', input_references' : ''})`,
    );
  if (inputs.length > positions.length) {
    const n = positions.length === 2 ? 'two images (first and last frame)' : `${positions.length} image(s)`;
    throw new RequestError(400, inputs[positions.length]!.field, `${inputs[positions.length]!.field}: ${task.id} takes at most ${n}`);
  }
}

export function assignRoles(
  task: VideoTaskSpec,
  extra: ExtraParams,
  decoded: DecodedImage[],
  inputs: ImageInput[],
): { firstFrame?: BlobRef; lastFrame?: BlobRef; references: BlobRef[] } {
  if (task.images === 'references') return { references: decoded.map((d) => d.ref) };
  if (task.images !== 'frames') return { references: [] };
  const positions = task.positions ?? [0];
  const indices = extra.frame_indices ?? (decoded.length === 2 ? [0, -1] : [0]);
  const valid = positions.length > 1 ? ['0', '-1', '0,-1'] : ['0'];
  if (!valid.includes(indices.join(','))) {
    const shown = positions.length > 1 ? '[0], [-1] or [0, -1]' : '[0]';
    throw new RequestError(400, 'extra_params.frame_indices', `extra_params.frame_indices: must be ${shown}, got ${JSON.stringify(indices)}`);
  }
  if (indices.length !== decoded.length) {
    const field = decoded.length > indices.length ? inputs[indices.length]!.field : 'extra_params.frame_indices';
    throw new RequestError(400, field, `${field}: ${decoded.length} image(s) but frame_indices ${JSON.stringify(indices)} places ${indices.length}`);
  }
  const out: { firstFrame?: BlobRef; lastFrame?: BlobRef; references: BlobRef[] } = { references: [] };
  indices.forEach((idx, i) => {
    if (idx === 0) out.firstFrame = decoded[i]!.ref;
    else out.lastFrame = decoded[i]!.ref;
  });
  return out;
}
