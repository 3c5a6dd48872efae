#!/usr/bin/env python3
"""Writes tools/fake-comfyui/fixtures/object_info.json from the recorded `/object_info` of a real ComfyUI 0.33.0
(a capture of its `GET /object_info`).

Node schemas are kept verbatim (Python's json round-trips the recording byte for byte, big ints and `1.0`
included, which JSON.parse/stringify would not); only the file lists of model and input folders change, as
tools/fake-comfyui/fixtures/README.md explains:
- LoadImage / LoadImageMask `image`: the capture run's leftover uploads are replaced by `example.png` (the fake
  rebuilds this list from its input directory on every request, as the real server does);
- the model files that the recorded video executions loaded on the same server (graph-*.json there) are added
  to their folders' lists, sorted as ComfyUI sorts them.

Usage: python3 scripts/object-info-fixture.py <recording> [out]
"""
import json
import sys

if len(sys.argv) < 2:
    sys.exit('usage: python3 scripts/object-info-fixture.py <recording> [out]')
SRC = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else 'tools/fake-comfyui/fixtures/object_info.json'

# (model folder, files added, node inputs listing that folder: V1 `[[...]]` or V3 `COMBO` options)
ADDED = [
    ('diffusion_models',
     ['wan2.2_ti2v_5B_fp16.safetensors', 'minimax_h3_fl2va_pruned_int8_convrot.safetensors'],
     ['UNETLoader.unet_name']),
    ('text_encoders',
     ['umt5_xxl_fp8_e4m3fn_scaled.safetensors', 'qwen3vl_32b_minimax_h3_nvfp4_awq.safetensors'],
     ['CLIPLoader.clip_name', 'DualCLIPLoader.clip_name1', 'DualCLIPLoader.clip_name2', 'CLIPLoaderGGUF.clip_name',
      'DualCLIPLoaderGGUF.clip_name1', 'DualCLIPLoaderGGUF.clip_name2', 'TripleCLIPLoaderGGUF.clip_name1',
      'TripleCLIPLoaderGGUF.clip_name2', 'TripleCLIPLoaderGGUF.clip_name3', 'QuadrupleCLIPLoaderGGUF.clip_name1',
      'QuadrupleCLIPLoaderGGUF.clip_name2', 'QuadrupleCLIPLoaderGGUF.clip_name3',
      'QuadrupleCLIPLoaderGGUF.clip_name4', 'TripleCLIPLoader.clip_name1', 'TripleCLIPLoader.clip_name2',
      'TripleCLIPLoader.clip_name3', 'LTXAVTextEncoderLoader.text_encoder', 'QuadrupleCLIPLoader.clip_name1',
      'QuadrupleCLIPLoader.clip_name2', 'QuadrupleCLIPLoader.clip_name3', 'QuadrupleCLIPLoader.clip_name4']),
    ('vae',
     ['wan2.2_vae.safetensors', 'minimax_h3_video_vae_fp16.safetensors', 'minimax_h3_audio_vae_fp32.safetensors'],
     ['VAELoader.vae_name']),
    # Not loaded on the recording server (it held no Ref2VA weights): the default file of the
    # videogen-minimax-h3 profile's `unetRef2va` role, so the fake stands in for a ComfyUI that has it.
    ('diffusion_models',
     ['minimax_h3_ref2va_pruned_int8_convrot.safetensors'],
     ['UNETLoader.unet_name']),
    ('loras',
     ['minimax_h3_fl2v_turbo_8step_v1.0_comfyui_bf16.safetensors',
      # the LoRA golden graphs' files (prompt tags); installed on the same server to record their verdicts
      'film-grain.safetensors', 'style/detail-tweaker.safetensors'],
     ['LoraLoader.lora_name', 'LoraLoaderModelOnly.lora_name', 'CreateHookLora.lora_name',
      'CreateHookLoraModelOnly.lora_name', 'LoraLoaderBypass.lora_name', 'LoraLoaderBypassModelOnly.lora_name']),
    ('upscale_models',
     ['4x-UltraSharp.pth'],  # the hires / extras golden graphs' upscale model, likewise
     ['UpscaleModelLoader.model_name']),
    # The ControlNet / image-prompt / background-removal files of tools/tiny-models/write_control_models.py, loaded
    # by the executions recorded on the same kind of server (test/fixtures/real-comfyui/execution-controlnet-*.json);
    # the inputs listing each folder are the ones the live /object_info showed with them installed.
    ('controlnet',
     ['flux1-dev-controlnet-union-pro.safetensors', 'flux-canny-controlnet-v3.safetensors'],
     ['ControlNetLoader.control_net_name', 'DiffControlNetLoader.control_net_name']),
    ('style_models', ['flux1-redux-dev.safetensors'], ['StyleModelLoader.style_model_name']),
    ('clip_vision', ['sigclip_vision_patch14_384.safetensors'], ['CLIPVisionLoader.clip_name']),
    ('model_patches', ['qwen_image_canny_diffsynth_controlnet.safetensors'], ['ModelPatchLoader.name']),
    ('background_removal', ['birefnet.safetensors'], ['LoadBackgroundRemovalModel.bg_removal_name']),
]

# VAELoader appends these after the sorted file list (nodes.py `vae_list`).
VAE_TAIL = ['pixel_space']

with open(SRC, encoding='utf-8') as f:
    info = json.load(f)


def spec_of(ref):
    cls, name = ref.split('.')
    inputs = info[cls]['input']
    spec = (inputs.get('required') or {}).get(name) or (inputs.get('optional') or {}).get(name)
    if spec is None:
        raise SystemExit(f'{ref} not in the recording')
    return spec


def get_list(spec):
    if isinstance(spec[0], list):
        return spec[0]
    if spec[0] == 'COMBO' and isinstance(spec[1].get('options'), list):
        return spec[1]['options']
    raise SystemExit(f'not a combo: {json.dumps(spec)[:80]}')


def set_list(spec, values):
    if isinstance(spec[0], list):
        spec[0] = values
    else:
        spec[1]['options'] = values


for _folder, files, refs in ADDED:
    for ref in refs:
        spec = spec_of(ref)
        current = get_list(spec)
        tail = [f for f in current if f in VAE_TAIL]
        files_sorted = sorted(set([f for f in current if f not in VAE_TAIL] + files))
        set_list(spec, files_sorted + tail)

for cls in ('LoadImage', 'LoadImageMask'):
    set_list(spec_of(f'{cls}.image'), ['example.png'])

with open(OUT, 'w', encoding='utf-8') as f:
    # The recording's own layout, so a diff against a re-recording shows only real changes.
    f.write(json.dumps(info, indent=1, ensure_ascii=False))
print(f'wrote {OUT}: {len(info)} node classes')
