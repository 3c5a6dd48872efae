import { VIDEO_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';

/**
 * Wan 2.2 TI2V-5B: ComfyUI template defaults 1280×704, 121 frames (5 s) at 24 fps, 20 steps,
 * cfg 5, uni_pc / simple, ModelSamplingSD3 shift 8. Sizes on a 32 px grid (Wan22ImageToVideoLatent steps
 * by 32: VAE stride 16 × patch 2), at most 1280×720 pixels as the model was trained; frames 4k+1.
 */
export const wan22_5b: ModelProfile = {
  id: 'videogen-wan22-5b',
  title: 'Wan 2.2 TI2V-5B',
  aliases: ['wan22-5b', 'wan2.2-ti2v-5b', 'Wan-AI/Wan2.2-TI2V-5B', 'Wan-AI/Wan2.2-TI2V-5B-Diffusers', 'wan'],
  family: 'wan22',
  kinds: ['video'],
  defaults: { steps: 20, cfg: 5, sampler: 'uni_pc', scheduler: 'simple', shift: 8, width: 1280, height: 704 },
  cfgMode: 'free',
  grid: 32,
  minSide: 128,
  maxSide: 1280,
  maxPixels: 1280 * 720,
  maxExtraImages: 0,
  files: {
    unet: 'wan2.2_ti2v_5B_fp16.safetensors',
    textEncoder: 'umt5_xxl_fp8_e4m3fn_scaled.safetensors',
    vae: 'wan2.2_vae.safetensors',
  },
  stallTimeoutMs: VIDEO_STALL_TIMEOUT_MS,
  // 121 frames at 1280×704 take ~5-15 min on one GPU; room for a stalled attempt and a retry.
  deadlineMs: 60 * 60_000,
  video: {
    frameGrid: { step: 4, offset: 1, round: 'down' },
    minFrames: 5,
    maxFrames: 241,
    defaultFrames: 121,
    defaultFps: 24,
    minFps: 1,
    maxFps: 60,
    tasks: ['t2v', 'i2v'],
    audio: false,
    imageSize: { mode: 'max-area', area: 1280 * 704 },
    sigmaPointSteps: false,
  },
};

export default wan22_5b;
