import { VIDEO_STALL_TIMEOUT_MS, type ModelProfile } from '../profile.ts';

/**
 * MiniMax-H3 (docs/video-api.md): video with 32 kHz stereo audio, always 24 fps, frames on
 * the 17k+5 grid (124 = 5.167 s; trained 4-15 s, i.e. up to 362 frames), native 1344×768 (short edge 768),
 * res_multistep / simple, 20 steps as the ComfyUI template, BasicGuider (CFG-distilled: no negative prompt).
 * Its API clients count steps in sigma points (vLLM-Omni/SGLang: 50 → 49 sampler steps).
 */
export const minimaxH3: ModelProfile = {
  id: 'videogen-minimax-h3',
  title: 'MiniMax-H3',
  aliases: ['minimax-h3', 'MiniMaxAI/MiniMax-H3', 'h3'],
  family: 'h3',
  kinds: ['video'],
  // shift: MiniMaxH3SigmaShift's video default, sent beside a requested audio shift (the node sets both).
  defaults: { steps: 20, cfg: 1, sampler: 'res_multistep', scheduler: 'simple', shift: 12, width: 1344, height: 768 },
  cfgMode: 'fixed-1',
  grid: 32,
  minSide: 128,
  maxSide: 2048,
  maxPixels: 1792 * 768,
  maxExtraImages: 9,
  files: {
    unet: 'minimax_h3_fl2va_pruned_int8_convrot.safetensors',
    unetRef2va: 'minimax_h3_ref2va_pruned_int8_convrot.safetensors',
    textEncoder: 'qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors',
    vae: 'minimax_h3_video_vae_fp16.safetensors',
    audioVae: 'minimax_h3_audio_vae_fp32.safetensors',
  },
  /*
   * The sglang engine: the worker takes a GGUF as its transformer weights, and the plugin reads the
   * architecture from the BF16 checkpoint of the same mode, which must sit in models/diffusion_models under
   * exactly these names (the plugin looks for no others).
   */
  sglang: {
    files: { unet: 'minimax_h3_fl2va-Q8_0.gguf', unetRef2va: 'minimax_h3_ref2va-Q8_0.gguf' },
    companions: { unet: 'minimax_h3_fl2va_bf16.safetensors', unetRef2va: 'minimax_h3_ref2va_bf16.safetensors' },
    options: { model_type: 'minimax_h3' },
  },
  stallTimeoutMs: VIDEO_STALL_TIMEOUT_MS,
  // A 33B DiT over 124+ frames plus a 32B VL text encoder: tens of minutes per attempt on one GPU.
  deadlineMs: 2 * 60 * 60_000,
  video: {
    frameGrid: { step: 17, offset: 5, round: 'up' },
    minFrames: 5,
    maxFrames: 362,
    defaultFrames: 124,
    defaultFps: 24,
    minFps: 24,
    maxFps: 24,
    tasks: ['t2va', 'fl2va', 'ref2va'],
    audio: true,
    imageSize: { mode: 'short-edge', shortEdge: 768 },
    sigmaPointSteps: true,
  },
};

export default minimaxH3;
