#!/usr/bin/env python3
"""Write the API-format graphs that exercise ControlNet, the Flux Redux image prompt, background removal and the
Qwen-Image DiffSynth model patch and SAM3 text segmentation on a real ComfyUI 0.33.0 with the tiny files of write_control_models.py, plus the
control image they read, into OUT_DIR:

    python control_graphs.py OUT_DIR [--image-name control-source.png]

Each graph is a small Flux-dev txt2img (256x256, 4 steps, the same seed and prompt) so that a graph with a unit and
the baseline graph without it differ only by the unit: a different output proves the unit reached the sampler.
Node inputs follow the recorded /object_info of ComfyUI 0.33.0 (test/fixtures/real-comfyui, tools/fake-comfyui).
The control image (a white disc and a bar on a dark gradient, 256x256 PNG) has edges Canny finds.
"""
import argparse
import json
import os
import struct
import zlib

SIZE = 256
PROMPT = 'a lighthouse on a cliff at dusk'


def node(class_type, title, **inputs):
    return {'class_type': class_type, 'inputs': inputs, '_meta': {'title': title}}


def flux_dev_base(prefix):
    """The flux-dev txt2img core; 'conditioned' is the positive conditioning the sampler reads, replaced by units."""
    return {
        'unet': node('UnetLoaderGGUF', 'Load diffusion model (GGUF)', unet_name='flux1-dev-Q8_0.gguf'),
        'clip': node('DualCLIPLoaderGGUF', 'Load T5-XXL + CLIP-L', clip_name1='t5xxl_fp8_e4m3fn.safetensors', clip_name2='clip_l.safetensors', type='flux'),
        'vae': node('VAELoader', 'Load VAE', vae_name='ae.safetensors'),
        'positive': node('CLIPTextEncode', 'Prompt', text=PROMPT, clip=['clip', 0]),
        'negative': node('ConditioningZeroOut', 'Negative (zeroed: Flux has no negative)', conditioning=['positive', 0]),
        'guidance': node('FluxGuidance', 'Guidance', conditioning=['positive', 0], guidance=3.5),
        'latent': node('EmptySD3LatentImage', 'Empty latent', width=SIZE, height=SIZE, batch_size=1),
        'sampler': node('KSampler', 'Sampler', model=['unet', 0], positive=['guidance', 0], negative=['negative', 0], latent_image=['latent', 0],
                        seed=1234, steps=4, cfg=1, sampler_name='euler', scheduler='simple', denoise=1),
        'decode': node('VAEDecode', 'Decode', samples=['sampler', 0], vae=['vae', 0]),
        'save': node('SaveImage', 'Save', images=['decode', 0], filename_prefix=f'comfy-durable/{prefix}'),
    }


def controlnet_unit(g, image_name, *, model, union_type=None, preprocess_canny=False, strength=0.8, start=0.0, end=1.0, with_vae=True):
    """ControlNetApplyAdvanced between the guidance and the sampler (both conditionings pass through it)."""
    g['control_image'] = node('LoadImage', 'Control image', image=image_name)
    hint = ['control_image', 0]
    if preprocess_canny:
        g['canny'] = node('Canny', 'Preprocessor: canny', image=hint, low_threshold=0.4, high_threshold=0.8)
        hint = ['canny', 0]
    g['controlnet'] = node('ControlNetLoader', 'Load ControlNet', control_net_name=model)
    net = ['controlnet', 0]
    if union_type is not None:
        g['union_type'] = node('SetUnionControlNetType', 'Union type', control_net=net, type=union_type)
        net = ['union_type', 0]
    inputs = dict(positive=['guidance', 0], negative=['negative', 0], control_net=net, image=hint, strength=strength, start_percent=start, end_percent=end)
    if with_vae:
        inputs['vae'] = ['vae', 0]
    g['apply_controlnet'] = node('ControlNetApplyAdvanced', 'Apply ControlNet', **inputs)
    g['sampler']['inputs']['positive'] = ['apply_controlnet', 0]
    g['sampler']['inputs']['negative'] = ['apply_controlnet', 1]
    return g


def redux_unit(g, image_name, strength=1.0):
    """Flux Redux: the image's SigLIP embedding, projected by the style model, appended to the conditioning."""
    g['reference_image'] = node('LoadImage', 'Image prompt', image=image_name)
    g['clip_vision'] = node('CLIPVisionLoader', 'Load CLIP vision', clip_name='sigclip_vision_patch14_384.safetensors')
    g['clip_vision_encode'] = node('CLIPVisionEncode', 'Encode image prompt', clip_vision=['clip_vision', 0], image=['reference_image', 0], crop='center')
    g['style_model'] = node('StyleModelLoader', 'Load Redux', style_model_name='flux1-redux-dev.safetensors')
    g['redux'] = node('StyleModelApply', 'Apply Redux', conditioning=['guidance', 0], style_model=['style_model', 0],
                      clip_vision_output=['clip_vision_encode', 0], strength=strength, strength_type='multiply')
    g['sampler']['inputs']['positive'] = ['redux', 0]
    return g


def background_removal(image_name):
    """Mask out (white = foreground) and the cut-out (RGBA: alpha = the mask; JoinImageWithAlpha inverts its input)."""
    return {
        'image': node('LoadImage', 'Image', image=image_name),
        'bg_model': node('LoadBackgroundRemovalModel', 'Load background removal model', bg_removal_name='birefnet.safetensors'),
        'remove': node('RemoveBackground', 'Remove background', bg_removal_model=['bg_model', 0], image=['image', 0]),
        'mask_image': node('MaskToImage', 'Mask as image', mask=['remove', 0]),
        'save_mask': node('SaveImage', 'Save mask', images=['mask_image', 0], filename_prefix='comfy-durable/rembg-mask'),
        'transparent': node('InvertMask', 'Background mask', mask=['remove', 0]),
        'cutout': node('JoinImageWithAlpha', 'Cut-out', image=['image', 0], alpha=['transparent', 0]),
        'save_cutout': node('SaveImage', 'Save cut-out', images=['cutout', 0], filename_prefix='comfy-durable/rembg-cutout'),
    }


def sam3_text(image_name):
    """Text segmentation as src/models/families/segment.ts builds it (SAM3 checkpoint -> CLIPTextEncode -> SAM3_Detect,
    threshold 0.3, 2 refine passes), with its three outputs in one graph: the mask, the cut-out (RGBA) and the blended
    image (EmptyImage tint composited through the mask, blended at 0.5); plus ImageInvert (the ControlNet `invert`
    preprocessor) of the source image."""
    return {
        'image': node('LoadImage', 'Image', image=image_name),
        'sam_model': node('CheckpointLoaderSimple', 'Load SAM3', ckpt_name='sam3.1_multiplex_fp16.safetensors'),
        'sam_text': node('CLIPTextEncode', 'What to find', clip=['sam_model', 1], text='the white disc'),
        'detect': node('SAM3_Detect', 'SAM3 detect', model=['sam_model', 0], image=['image', 0], conditioning=['sam_text', 0], threshold=0.3,
                       refine_iterations=2, individual_masks=False),
        'mask_image': node('MaskToImage', 'Mask as image', mask=['detect', 0]),
        'save_mask': node('SaveImage', 'Save mask', images=['mask_image', 0], filename_prefix='comfy-durable/sam3-mask'),
        'transparent': node('InvertMask', 'Not found', mask=['detect', 0]),
        'cutout': node('JoinImageWithAlpha', 'Cut-out', image=['image', 0], alpha=['transparent', 0]),
        'save_cutout': node('SaveImage', 'Save cut-out', images=['cutout', 0], filename_prefix='comfy-durable/sam3-cutout'),
        'tint': node('EmptyImage', 'Tint', width=SIZE, height=SIZE, batch_size=1, color=0x1E90FF),
        'tinted': node('ImageCompositeMasked', 'Tint what was found', destination=['image', 0], source=['tint', 0], x=0, y=0, resize_source=False,
                       mask=['detect', 0]),
        'blended': node('ImageBlend', 'Blend', image1=['image', 0], image2=['tinted', 0], blend_factor=0.5, blend_mode='normal'),
        'save_blended': node('SaveImage', 'Save blended', images=['blended', 0], filename_prefix='comfy-durable/sam3-blended'),
        'invert': node('ImageInvert', 'Preprocessor: invert', image=['image', 0]),
        'save_invert': node('SaveImage', 'Save inverted', images=['invert', 0], filename_prefix='comfy-durable/invert'),
    }


def qwen_diffsynth(image_name):
    """Qwen-Image with the DiffSynth canny model patch (ComfyUI's template layout). Qwen's 7B text encoder cannot
    run on this CPU machine: this graph is recorded for acceptance (validation) only."""
    return {
        'unet': node('UnetLoaderGGUF', 'Load diffusion model (GGUF)', unet_name='qwen-image-Q8_0.gguf'),
        'model_sampling': node('ModelSamplingAuraFlow', 'Shift', model=['unet', 0], shift=3.1),
        'clip': node('CLIPLoader', 'Load text encoder', clip_name='qwen_2.5_vl_7b_fp8_scaled.safetensors', type='qwen_image'),
        'vae': node('VAELoader', 'Load VAE', vae_name='qwen_image_vae.safetensors'),
        'positive': node('CLIPTextEncode', 'Prompt', text=PROMPT, clip=['clip', 0]),
        'negative': node('CLIPTextEncode', 'Negative', text='', clip=['clip', 0]),
        'control_image': node('LoadImage', 'Control image', image=image_name),
        'canny': node('Canny', 'Preprocessor: canny', image=['control_image', 0], low_threshold=0.4, high_threshold=0.8),
        'patch': node('ModelPatchLoader', 'Load model patch', name='qwen_image_canny_diffsynth_controlnet.safetensors'),
        'apply_patch': node('QwenImageDiffsynthControlnet', 'Apply DiffSynth ControlNet', model=['model_sampling', 0], model_patch=['patch', 0], vae=['vae', 0],
                            image=['canny', 0], strength=1.0),
        'latent': node('EmptySD3LatentImage', 'Empty latent', width=SIZE, height=SIZE, batch_size=1),
        'sampler': node('KSampler', 'Sampler', model=['apply_patch', 0], positive=['positive', 0], negative=['negative', 0], latent_image=['latent', 0],
                        seed=1234, steps=4, cfg=2.5, sampler_name='euler', scheduler='simple', denoise=1),
        'decode': node('VAEDecode', 'Decode', samples=['sampler', 0], vae=['vae', 0]),
        'save': node('SaveImage', 'Save', images=['decode', 0], filename_prefix='comfy-durable/qwen-diffsynth'),
    }


def png_rgb(width, height, pixel):
    rows = b''.join(b'\x00' + b''.join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))
    chunk = lambda tag, data: struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data))
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b'')


def control_source(x, y):
    """A white disc and a vertical bar on a dark blue gradient: sharp edges for Canny, a 'foreground' to cut out."""
    if (x - 100) ** 2 + (y - 128) ** 2 < 60 ** 2 or (180 <= x < 210 and 40 <= y < 220):
        return (240, 240, 240)
    return (20, 30, 40 + y // 4)


def graphs(image_name):
    return {
        'flux-dev-baseline': flux_dev_base('cn-baseline'),
        'flux-dev-controlnet-union-canny': controlnet_unit(flux_dev_base('cn-union'), image_name, model='flux1-dev-controlnet-union-pro.safetensors',
                                                           union_type='canny/lineart/anime_lineart/mlsd', preprocess_canny=True),
        'flux-dev-controlnet-plain-none': controlnet_unit(flux_dev_base('cn-plain'), image_name, model='flux-canny-controlnet-v3.safetensors', with_vae=False),
        'flux-dev-redux': redux_unit(flux_dev_base('redux'), image_name),
        'rembg-birefnet': background_removal(image_name),
        'qwen-image-diffsynth-canny': qwen_diffsynth(image_name),
        'sam3-text': sam3_text(image_name),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out_dir')
    ap.add_argument('--image-name', default='control-source.png')
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, a.image_name), 'wb') as f:
        f.write(png_rgb(SIZE, SIZE, control_source))
    for name, g in graphs(a.image_name).items():
        with open(os.path.join(a.out_dir, f'graph-{name}.json'), 'w') as f:
            json.dump(g, f, indent=2)
            f.write('\n')
        print('wrote', name)


if __name__ == '__main__':
    main()
