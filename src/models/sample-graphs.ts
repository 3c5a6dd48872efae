/**
 * The distinct graphs a profile can submit (each kind; img2img with and without a mask; edits with 1..max
 * references; every video task), built as the service builds them. Read by the contract check against a live
 * ComfyUI and by the fake ComfyUI, whose loader lists get every file these graphs name.
 */
import type { ComfyGraph } from '../comfyui/graph.ts';
import type { BlobRef, ControlUnit, ImageRender, RenderRequest, SampledRender } from '../contracts/render.ts';
import { UNION_CONTROL_TYPES } from '../contracts/render.ts';
import { controlUnsupported } from './families/controls.ts';
import { planRender } from './plan.ts';
import type { ModelProfile } from './profile.ts';
import { defaultVideoSpec } from './video.ts';
import { videoTasksOf } from './video-tasks.ts';

/** What an image and a video render of the profile share: its defaults. */
function sampled(profile: ModelProfile): SampledRender {
  const d = profile.defaults;
  return {
    model: profile.id,
    prompt: 'contract',
    negativePrompt: '',
    seed: 1,
    steps: d.steps,
    cfg: d.cfg,
    sampler: d.sampler,
    scheduler: d.scheduler,
    width: d.width,
    height: d.height,
    batchSize: 1,
    nIter: 1,
  };
}

function sampleImageRequest(profile: ModelProfile, over: Partial<ImageRender> & Pick<ImageRender, 'kind'>): ImageRender {
  const d = profile.defaults;
  return {
    ...sampled(profile),
    ...(d.guidance !== undefined ? { guidance: d.guidance } : {}),
    denoise: 1,
    extraImages: [],
    report: { samplerName: d.sampler, scheduler: d.scheduler, requestedWidth: d.width, requestedHeight: d.height },
    ...over,
  };
}

/** The distinct graphs a profile can submit: each kind; img2img with and without a mask; edits with 1..max refs. */
export function sampleGraphs(profile: ModelProfile): ComfyGraph[] {
  const requests: RenderRequest[] = [];
  for (const kind of profile.kinds) {
    if (kind === 'img2img') {
      requests.push(sampleImageRequest(profile, { kind, initImage: ref(1), denoise: 0.5 }));
      requests.push(sampleImageRequest(profile, { kind, initImage: ref(2), mask: ref(3), denoise: 0.9 }));
    } else if (kind === 'video') {
      // Every task the model has: without images, with a first frame, with first+last frames, with references.
      const base = defaultVideoSpec(profile);
      for (const task of videoTasksOf(profile)) {
        const frames = task.images === 'frames' ? (task.positions ?? [0]) : [];
        const images = { ...(frames.includes(0) ? { firstFrame: ref(1) } : {}), ...(frames.includes(-1) ? { lastFrame: ref(2) } : {}) };
        const references = task.images === 'references' ? [ref(3), ref(4)] : [];
        requests.push({ ...sampled(profile), kind, video: { ...base, task: task.id, ...images, references } });
      }
    } else if (kind === 'edit') {
      for (let n = 1; n <= Math.max(1, profile.maxExtraImages); n++) {
        requests.push(sampleImageRequest(profile, { kind, extraImages: Array.from({ length: n }, (_, i) => ref(10 + i)) }));
      }
    } else if (kind === 'txt2img') {
      requests.push(sampleImageRequest(profile, { kind }));
    }
  }
  return requests.map(graphOf);
}

/**
 * One txt2img per control unit the profile's files allow, so each ControlNet / model patch / Redux file is
 * checked. Apart from sampleGraphs: a ComfyUI without a control file still renders the model, only the units
 * that need the file are refused.
 */
export function controlSampleGraphs(profile: ModelProfile): ComfyGraph[] {
  if (!profile.kinds.includes('txt2img')) return [];
  return sampleControlUnits()
    .filter((unit) => controlUnsupported(profile, unit) === undefined)
    .map((unit) => graphOf(sampleImageRequest(profile, { kind: 'txt2img', controls: [unit] })));
}

const graphOf = (r: RenderRequest): ComfyGraph => planRender(r, { renderId: 'render-contract' }).items[0]!.graph;

/** A unit of every control type and an image prompt: the families pick the ones their files cover. */
function sampleControlUnits(): ControlUnit[] {
  return [
    { kind: 'image-prompt', image: ref(20), strength: 1 },
    ...UNION_CONTROL_TYPES.map((controlType): ControlUnit => ({
      kind: 'controlnet',
      image: ref(21),
      preprocessor: 'none',
      controlType,
      strength: 1,
      start: 0,
      end: 1,
    })),
  ];
}

/** Images are never read by these checks: LoadImage's file is ComfyUI's to validate at submit time. */
function ref(n: number): BlobRef {
  return { sha256: n.toString(16).padStart(64, '0'), size: 1, mime: 'image/png', width: 64, height: 64 };
}
