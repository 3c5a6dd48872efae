/**
 * Wan 2.2 TI2V-5B, as ComfyUI's official template: UNETLoader → ModelSamplingSD3 (shift), CLIPLoader type
 * `wan`, Wan22ImageToVideoLatent (with the optional start image for image-to-video), KSampler with a real
 * negative prompt, VAEDecode, CreateVideo, SaveVideo. T2V and I2V are one model: the start image alone
 * selects I2V. No audio.
 */
import type { ComfyGraph } from '../../../comfyui/graph.ts';
import { GraphBuilder, loadImage, loadSingleClip, loadUnet, loadVae, type VideoBuildInput, type VideoFamilyBuilder } from '../common.ts';
import { createAndSaveVideo } from '../video-common.ts';
import { VIDEO_END_PROGRESS } from '../video-family.ts';

export const WAN22_FILE_ROLES = ['unet', 'textEncoder', 'vae'] as const;

/** ComfyUI template's ModelSamplingSD3 shift for TI2V-5B. */
const WAN22_DEFAULT_SHIFT = 8;

export const wan22Builder: VideoFamilyBuilder = {
  family: 'wan22',
  // Flow-matching; its latent is Wan's own video latent (the builder's), and ComfyUI fits Optimal Steps to Wan.
  sampling: { prediction: 'flow', alignYourSteps: { node: 'OptimalStepsScheduler', modelType: 'Wan' } },
  fileRoles: WAN22_FILE_ROLES,
  kinds: ['video'],
  // UMT5-XXL (5.7B) over 512 tokens; the Wan 2.2 VAE decodes a 1280x704x121 clip (109 units) in about two minutes.
  silentStages: { encodeMs: 5_000, decodeMsPerUnit: 1_000 },
  // One model for both: the start image alone selects image-to-video.
  video: {
    tasks: [
      { id: 't2v', images: 'none' },
      { id: 'i2v', images: 'frames', positions: [0] },
    ],
    progressAfterSampler: VIDEO_END_PROGRESS,
  },
  build(input: VideoBuildInput): ComfyGraph {
    const { profile, request, images } = input;
    const spec = request.video;
    const g = new GraphBuilder();
    const unet = loadUnet(g, profile);
    const model = g.add('model_sampling', 'ModelSamplingSD3', 'Model sampling shift', {
      model: unet,
      shift: spec.shift ?? profile.defaults.shift ?? WAN22_DEFAULT_SHIFT,
    });
    const clip = loadSingleClip(g, profile, 'wan');
    const vae = loadVae(g, profile);
    const positive = g.add('positive', 'CLIPTextEncode', 'Prompt', { text: request.prompt, clip });
    const negative = g.add('negative', 'CLIPTextEncode', 'Negative prompt', { text: request.negativePrompt, clip });
    if (spec.task === 'i2v' && !images.first) throw new Error('i2v graph without a start image');
    const start = spec.task === 'i2v' && images.first ? loadImage(g, 'start_image', 'Start image', images.first) : undefined;
    const latent = g.add('latent', 'Wan22ImageToVideoLatent', 'Video latent', {
      vae,
      width: request.width,
      height: request.height,
      length: spec.frames,
      batch_size: 1,
      ...(start ? { start_image: start } : {}),
    });
    const sampled = g.add('sampler', 'KSampler', 'Sample', {
      model,
      positive,
      negative,
      latent_image: latent,
      seed: input.seed,
      steps: request.steps,
      cfg: request.cfg,
      sampler_name: request.sampler,
      scheduler: request.scheduler,
      denoise: 1,
    });
    const frames = g.add('decode', 'VAEDecode', 'Decode frames', { samples: sampled, vae });
    createAndSaveVideo(g, input, { images: frames });
    return g.graph();
  },
};

export default wan22Builder;
