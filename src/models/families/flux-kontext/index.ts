/**
 * Flux Kontext instruction edit. Order matters: CLIPTextEncode → ReferenceLatent → FluxGuidance. Putting
 * guidance before the reference creates a dependency cycle that ComfyUI rejects. Several references are
 * stitched left to right (ImageStitch) and then scaled to a Kontext-preferred size (FluxKontextImageScale);
 * the reference latent is the VAE encoding of that scaled image. The output latent has the requested size.
 */
import type { ComfyGraph, NodeLink } from '../../../comfyui/graph.ts';
import { GraphBuilder, loadImage, sampleDecodeSave, sourceLatent, type BuildInput, type FamilyBuilder } from '../common.ts';
import { FLUX_FILE_ROLES, FLUX_SAMPLING, FLUX_SILENT_STAGES, fluxBase } from '../flux/index.ts';

/** Kontext's recommended guidance when the request carries none. */
const KONTEXT_GUIDANCE = 2.5;

export const fluxKontextBuilder: FamilyBuilder = {
  family: 'flux-kontext',
  sampling: FLUX_SAMPLING,
  fileRoles: FLUX_FILE_ROLES,
  kinds: ['edit', 'txt2img'],
  silentStages: FLUX_SILENT_STAGES,
  build(input: BuildInput): ComfyGraph {
    const { request, images } = input;
    if (request.kind === 'edit' && images.refs.length === 0) throw new Error('Kontext edit graph without reference images');
    const g = new GraphBuilder();
    const { model, vae, text, negative } = fluxBase(g, input);
    if (request.kind === 'txt2img') {
      // Text-to-image through Kontext: the same conditioning without a reference latent.
      const positive = g.add('guidance', 'FluxGuidance', 'Flux guidance', { conditioning: text, guidance: request.guidance ?? KONTEXT_GUIDANCE });
      sampleDecodeSave(g, input, { model, positive, negative, latent: sourceLatent(g, input, vae, FLUX_SAMPLING), vae });
      return g.graph();
    }

    let stitched: NodeLink | undefined;
    images.refs.forEach((name, i) => {
      const ref = loadImage(g, `ref_${i + 1}`, `Reference image ${i + 1}`, name);
      stitched =
        stitched === undefined
          ? ref
          : g.add(`stitch_${i + 1}`, 'ImageStitch', `Stitch reference ${i + 1}`, {
              image1: stitched,
              image2: ref,
              direction: 'right',
              match_image_size: true,
              spacing_width: 0,
              spacing_color: 'white',
            });
    });
    const scaled = g.add('ref_scale', 'FluxKontextImageScale', 'Scale reference for Kontext', {
      image: stitched as NodeLink,
    });
    const refLatent = g.add('ref_latent', 'VAEEncode', 'Encode reference', { pixels: scaled, vae });
    const withRef = g.add('reference', 'ReferenceLatent', 'Reference latent', {
      conditioning: text,
      latent: refLatent,
    });
    const positive = g.add('guidance', 'FluxGuidance', 'Flux guidance', {
      conditioning: withRef,
      guidance: request.guidance ?? KONTEXT_GUIDANCE,
    });
    // An edit renders from an empty latent of the requested size: the references condition, not initialise.
    const latent = sourceLatent(g, input, vae, FLUX_SAMPLING);
    sampleDecodeSave(g, input, { model, positive, negative, latent, vae });
    return g.graph();
  },
};

export default fluxKontextBuilder;
