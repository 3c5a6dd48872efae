#!/usr/bin/env python3
"""Write tiny random-weight ControlNet, model-patch, Redux, CLIP-vision and background-removal files that a real
ComfyUI 0.33.0 loads, so the project's ControlNet / image-prompt / background-removal golden graphs can be executed
end to end on a CPU machine (outputs are noise; what is checked is that the graphs load, run, and that a control
unit changes the sampler's output).

Run from a ComfyUI 0.33.0 folder with its venv, after the shared tiny Flux writer (make_tiny_models.py):
    cd <ComfyUI> && <venv>/bin/python <project>/tools/tiny-models/write_control_models.py [--only NAME,...]

Every module is built from ComfyUI's own classes (so the key names and shapes are the ones its loaders expect), its
parameters are replaced by random values, and its buffers (Swin's relative_position_index, ...) are kept as
computed. The files and the loader path each one takes in ComfyUI 0.33.0:

| file (under models/)                                        | loader path in comfy                                   |
|-------------------------------------------------------------|--------------------------------------------------------|
| controlnet/flux1-dev-controlnet-union-pro.safetensors       | InstantX diffusers keys -> load_controlnet_flux_instantx, |
|                                                             | 10 union modes (SetUnionControlNetType), latent input  |
| controlnet/flux-canny-controlnet-v3.safetensors             | XLabs comfy keys -> load_controlnet_flux_xlabs_mistoline |
|                                                             | (a plain, single-type ControlNet; pixel hint)          |
| model_patches/qwen_image_canny_diffsynth_controlnet.safetensors | ModelPatchLoader -> QwenImageBlockWiseControlNet   |
| style_models/flux1-redux-dev.safetensors                    | load_style_model -> ReduxImageEncoder (1152 -> 4096)   |
| clip_vision/sigclip_vision_patch14_384.safetensors          | clip_vision.load -> clip_vision_siglip_384.json        |
| background_removal/birefnet.safetensors                     | bg_removal_model.load -> BiRefNet (Swin-L)             |
| checkpoints/sam3.1_multiplex_fp16.safetensors               | CheckpointLoaderSimple -> model_detection (SAM3 keys)  |
|                                                             | -> SAM3Model + its CLIP text encoder (language_backbone) |

The Flux ControlNets match the shared tiny Flux (hidden 128, 1 head, context 4096, vec 768, guidance embedding:
they pair with flux1-dev-Q8_0.gguf). The others keep the real architectures' sizes, because ComfyUI builds those
from fixed configs (the bytes are what makes them large: ~0.1-1.2 GB each, fp16/bf16).
"""
import argparse
import os
import sys

sys.path.insert(0, os.getcwd())
sys.argv, _own_args = [sys.argv[0], '--cpu'], sys.argv[1:]
import comfy.options  # noqa: E402

comfy.options.enable_args_parsing()  # comfy.cli_args then sees --cpu
import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import comfy.ops  # noqa: E402
import comfy.utils  # noqa: E402

MODELS = os.path.join(os.getcwd(), 'models')
# The shared tiny Flux (tools/real-comfyui/make_tiny_models.py in the shared reference), with a guidance embedding.
TINY_FLUX = dict(image_model='flux', in_channels=16, out_channels=16, vec_in_dim=768, context_in_dim=4096, hidden_size=128,
                 mlp_ratio=4.0, num_heads=1, axes_dim=[16, 56, 56], theta=10000, patch_size=2, qkv_bias=True,
                 guidance_embed=True, txt_ids_dims=[])
UNION_MODES = 10  # InstantX FLUX.1-dev-Controlnet-Union-Pro has 10 modes; SetUnionControlNetType's list indexes them


def random_like(name, value, gen):
    """Random parameter values that keep activations finite through many layers: small normal weights, unit
    norm/scale weights, zero biases. Integer tensors (indices) are never parameters and never reach here."""
    if name.endswith('.bias'):
        return torch.zeros(value.shape)
    if value.ndim <= 1:
        return torch.ones(value.shape)
    return torch.randn(value.shape, generator=gen) * 0.02


def randomised_state_dict(module, dtype, seed):
    """module's state dict with every parameter random and every buffer as the module computed it."""
    gen = torch.Generator().manual_seed(seed)
    params = {n for n, _ in module.named_parameters()}
    out = {}
    for name, value in module.state_dict().items():
        if name in params:
            out[name] = random_like(name, value, gen).to(dtype)
        else:
            out[name] = value.detach().clone().contiguous()
    return out


def save(sd, folder, name):
    os.makedirs(os.path.join(MODELS, folder), exist_ok=True)
    path = os.path.join(MODELS, folder, name)
    save_file({k: v.contiguous() for k, v in sd.items()}, path)
    print(f'wrote {folder}/{name}: {os.path.getsize(path)} bytes, {len(sd)} tensors', flush=True)


def comfy_to_diffusers_flux(comfy_sd, depth, depth_single):
    """Invert ComfyUI's diffusers->comfy Flux key map (comfy.utils.flux_to_diffusers): each diffusers key names a
    comfy tensor, or a slice of one (fused qkv / linear1 split into to_q/to_k/to_v/proj_mlp). The map also lists
    aliases (LyCORIS/Flux-2 names) after the diffusers name of the same tensor: only the first name is written."""
    key_map = comfy.utils.flux_to_diffusers({'depth': depth, 'depth_single_blocks': depth_single, 'hidden_size': TINY_FLUX['hidden_size']})
    out, used, written = {}, set(), set()
    for diffusers_key, target in key_map.items():
        if isinstance(target, str):
            if target in comfy_sd and (target, None) not in written:
                out[diffusers_key] = comfy_sd[target]
                used.add(target)
                written.add((target, None))
            continue
        comfy_key, offset = target[0], target[1]
        if comfy_key not in comfy_sd or (comfy_key, offset) in written:
            continue
        written.add((comfy_key, offset))
        if len(target) > 2:
            raise ValueError(f'{diffusers_key}: a transformed key (norm_out) is not expected in a ControlNet')
        value = comfy_sd[comfy_key]
        out[diffusers_key] = value if offset is None else value.narrow(*offset).clone()
        used.add(comfy_key)
    for key, value in comfy_sd.items():  # ControlNet-only keys keep their names (controlnet_blocks.*, ...)
        if key not in used:
            out[key] = value
    return out


def flux_union_controlnet():
    from comfy.ldm.flux.controlnet import ControlNetFlux

    net = ControlNetFlux(latent_input=True, num_union_modes=UNION_MODES, control_latent_channels=16, depth=1, depth_single_blocks=1,
                         dtype=torch.float32, device='cpu', operations=comfy.ops.disable_weight_init, **TINY_FLUX)
    comfy_sd = randomised_state_dict(net, torch.float32, seed=11)
    sd = comfy_to_diffusers_flux(comfy_sd, depth=1, depth_single=1)
    # comfy's pos_embed_input is the diffusers controlnet_x_embedder (comfy.utils.flux_to_diffusers maps it back)
    save(sd, 'controlnet', 'flux1-dev-controlnet-union-pro.safetensors')


def flux_plain_controlnet():
    from comfy.ldm.flux.controlnet import ControlNetFlux

    net = ControlNetFlux(depth=2, depth_single_blocks=0, dtype=torch.float32, device='cpu', operations=comfy.ops.disable_weight_init, **TINY_FLUX)
    sd = randomised_state_dict(net, torch.float32, seed=12)
    # XLabs files use BFL's names (query_norm.scale / key_norm.scale): ComfyUI detects the XLabs format by
    # double_blocks.0.img_attn.norm.key_norm.scale and renames *_norm.scale to .weight when it loads (Flux config).
    sd = {(k[: -len('.weight')] + '.scale' if k.endswith('_norm.weight') else k): v for k, v in sd.items()}
    save(sd, 'controlnet', 'flux-canny-controlnet-v3.safetensors')


def qwen_diffsynth_patch():
    from comfy_extras.nodes_model_patch import QwenImageBlockWiseControlNet

    net = QwenImageBlockWiseControlNet(additional_in_dim=0, device='cpu', dtype=torch.bfloat16, operations=comfy.ops.manual_cast)
    save(randomised_state_dict(net, torch.bfloat16, seed=13), 'model_patches', 'qwen_image_canny_diffsynth_controlnet.safetensors')


def redux_style_model():
    from comfy.ldm.flux.redux import ReduxImageEncoder

    save(randomised_state_dict(ReduxImageEncoder(dtype=torch.float16), torch.float16, seed=14), 'style_models', 'flux1-redux-dev.safetensors')


def siglip_clip_vision():
    import comfy.clip_vision

    config = os.path.join(os.path.dirname(comfy.clip_vision.__file__), 'clip_vision_siglip_384.json')
    save(randomised_state_dict(comfy.clip_vision.ClipVisionModel(config).model, torch.float16, seed=15), 'clip_vision', 'sigclip_vision_patch14_384.safetensors')


def birefnet_background_removal():
    import comfy.bg_removal_model

    config = os.path.join(os.path.dirname(comfy.bg_removal_model.__file__), 'background_removal', 'birefnet.json')
    model = comfy.bg_removal_model.BackgroundRemovalModel(config).model
    save(randomised_state_dict(model, torch.float16, seed=16), 'background_removal', 'birefnet.safetensors')


def sam3_checkpoint():
    """A SAM3 checkpoint as CheckpointLoaderSimple reads it: SAM3Model's own keys (detector.*, tracker.*; detected by
    detector.backbone.vision_backbone.trunk.blocks.0.attn.qkv.weight and detector.transformer.decoder.query_embed.weight)
    plus the text encoder under detector.backbone.language_backbone.: supported_models.SAM3 moves every
    language_backbone key but the resizer to the CLIP, strips that prefix, and clip_text_transformers_convert leaves
    keys already in its own (transformers) layout as they are, so the wrapper's own state-dict keys load back. Written
    under the name ComfyUI's SAM3 templates use; without propagation_convs keys it loads as SAM3 (not 3.1)."""
    import comfy.ldm.sam3.detector
    import comfy.text_encoders.sam3_clip

    ops = comfy.ops.disable_weight_init
    model = comfy.ldm.sam3.detector.SAM3Model(device='cpu', dtype=torch.float32, operations=ops, image_model='SAM3')
    sd = randomised_state_dict(model, torch.float16, seed=23)
    del model
    clip = comfy.text_encoders.sam3_clip.SAM3ClipModelWrapper(device='cpu', dtype=torch.float32)
    for name, value in randomised_state_dict(clip, torch.float16, seed=24).items():
        sd['detector.backbone.language_backbone.' + name] = value
    save(sd, 'checkpoints', 'sam3.1_multiplex_fp16.safetensors')


WRITERS = {
    'flux-union': flux_union_controlnet,
    'flux-plain': flux_plain_controlnet,
    'qwen-patch': qwen_diffsynth_patch,
    'redux': redux_style_model,
    'clip-vision': siglip_clip_vision,
    'birefnet': birefnet_background_removal,
    'sam3': sam3_checkpoint,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', default=','.join(WRITERS), help='comma-separated subset of: ' + ', '.join(WRITERS))
    args = parser.parse_args(_own_args)
    for name in args.only.split(','):
        WRITERS[name.strip()]()


if __name__ == '__main__':
    main()
