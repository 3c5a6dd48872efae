/**
 * MiniMax-H3 with ComfyUI's core nodes, as its official template (subgraph flattened): UNETLoader, CLIPLoader
 * type `minimax` (Qwen3-VL), a video and an audio VAE; the conditioning node builds the audio-video latent
 * from the prompt (the distilled model runs BasicGuider: no negative prompt, no CFG):
 * - `t2va` / `fl2va`: MiniMaxH3ImageToVideo with the optional `first_frame` / `last_frame`;
 * - `ref2va`: MiniMaxH3ReferenceToVideo on the Ref2VA checkpoint, references as the autogrow inputs
 *   `ref_images.ref_image_<i>` (the API names ComfyUI expands COMFY_AUTOGROW_V3 to).
 * RandomNoise + KSamplerSelect + BasicScheduler → SamplerCustomAdvanced; the sampled latent is decoded twice,
 * frames by the video VAE and the stereo soundtrack by the audio VAE, and muxed by CreateVideo.
 * The node snaps `length` up to 17k+5 itself; the front already sends a count on that grid.
 */
import type { ComfyGraph, NodeLink } from '../../../comfyui/graph.ts';
import { GraphBuilder, loadImage, loadSingleClip, loadUnet, requireFile, type VideoBuildInput, type VideoFamilyBuilder } from '../common.ts';
import { createAndSaveVideo } from '../video-common.ts';
import { VIDEO_END_PROGRESS } from '../video-family.ts';

export const H3_FILE_ROLES = ['unet', 'unetRef2va', 'textEncoder', 'vae', 'audioVae'] as const;

/** MiniMaxH3SigmaShift's audio default, used when only the video shift is requested. */
const H3_DEFAULT_AUDIO_SHIFT = 3;

export const h3Builder: VideoFamilyBuilder = {
  family: 'h3',
  // Flow-matching (its video/audio shift), with its own latent; ComfyUI has no Optimal Steps fit for it.
  sampling: { prediction: 'flow' },
  fileRoles: H3_FILE_ROLES,
  kinds: ['video'],
  // A 32B vision-language text encoder (NVFP4) and a video VAE with an audio VAE beside it.
  silentStages: { encodeMs: 20_000, decodeMsPerUnit: 1_500 },
  video: {
    tasks: [
      { id: 't2va', images: 'none' },
      { id: 'fl2va', images: 'frames', positions: [0, -1] },
      { id: 'ref2va', images: 'references' },
    ],
    progressAfterSampler: { ...VIDEO_END_PROGRESS, decode_audio: 92 },
  },
  build(input: VideoBuildInput): ComfyGraph {
    const { profile, request, images } = input;
    const spec = request.video;
    const g = new GraphBuilder();
    // FL2VA weights serve t2va and fl2va; reference mode is a separate checkpoint.
    let model = loadUnet(g, profile, spec.task === 'ref2va' ? 'unetRef2va' : 'unet');
    if (spec.shift !== undefined) {
      model = g.add('model_sampling', 'MiniMaxH3SigmaShift', 'Sigma shift (video / audio)', {
        model,
        shift_video: spec.shift,
        shift_audio: spec.audioShift ?? H3_DEFAULT_AUDIO_SHIFT,
      });
    }
    const clip = loadSingleClip(g, profile, 'minimax');
    const vae = g.add('vae', 'VAELoader', 'Load video VAE', { vae_name: requireFile(profile, 'vae') });
    const audioVae = g.add('audio_vae', 'VAELoader', 'Load audio VAE', { vae_name: requireFile(profile, 'audioVae') });

    const common = { clip, vae, prompt: request.prompt, width: request.width, height: request.height, length: spec.frames };
    let conditioning: NodeLink;
    if (spec.task === 'ref2va') {
      if (images.refs.length === 0) throw new Error('ref2va graph without reference images');
      const refs: Record<string, NodeLink> = {};
      images.refs.forEach((name, i) => {
        refs[`ref_images.ref_image_${i}`] = loadImage(g, `ref_image_${i}`, `Reference image ${i + 1}`, name);
      });
      conditioning = g.add('conditioning', 'MiniMaxH3ReferenceToVideo', 'MiniMax H3 reference to video', {
        ...common,
        audio_vae: audioVae,
        ref_image_size: 'match',
        ...refs,
      });
    } else {
      if (spec.task === 'fl2va' && !images.first && !images.last) throw new Error('fl2va graph without a first or last frame');
      const first = spec.task === 'fl2va' && images.first ? loadImage(g, 'first_frame', 'First frame', images.first) : undefined;
      const last = spec.task === 'fl2va' && images.last ? loadImage(g, 'last_frame', 'Last frame', images.last) : undefined;
      conditioning = g.add('conditioning', 'MiniMaxH3ImageToVideo', 'MiniMax H3 image to video', {
        ...common,
        ...(first ? { first_frame: first } : {}),
        ...(last ? { last_frame: last } : {}),
      });
    }
    const latent: NodeLink = [conditioning[0], 1];
    const noise = g.add('noise', 'RandomNoise', 'Noise', { noise_seed: input.seed });
    const sampler = g.add('sampler_select', 'KSamplerSelect', 'Sampler', { sampler_name: request.sampler });
    const sigmas = g.add('scheduler', 'BasicScheduler', 'Scheduler', { model, scheduler: request.scheduler, steps: request.steps, denoise: 1 });
    const guider = g.add('guider', 'BasicGuider', 'Guider (CFG-distilled)', { model, conditioning });
    const sampled = g.add('sampler', 'SamplerCustomAdvanced', 'Sample', { noise, guider, sampler, sigmas, latent_image: latent });
    const frames = g.add('decode', 'VAEDecode', 'Decode frames', { samples: sampled, vae });
    const audio = g.add('decode_audio', 'VAEDecodeAudio', 'Decode audio', { samples: sampled, vae: audioVae });
    createAndSaveVideo(g, input, { images: frames, audio });
    return g.graph();
  },
};

export default h3Builder;
