/**
 * ControlNet preprocessors beyond ComfyUI's core (none, Canny, ImageInvert), bound late: sd-webui-controlnet's
 * module names and the comfyui_controlnet_aux node class each one runs as (its node_wrappers/*.py). A module is
 * available when the live ComfyUI's `/object_info` has its class; the node takes the image (required) and, when
 * it declares one, `resolution` (the unit's `processor_res`); its other inputs keep their defaults. A class name
 * the live server lists under a preprocessor category is taken as a module too, so a node pack this table does
 * not know still works by its class name.
 */
import type { ObjectInfo } from '../comfyui/object-info.ts';
import { inputSpec } from '../comfyui/object-info.ts';

/** The extension's module names → comfyui_controlnet_aux classes. */
export const AUX_PREPROCESSOR_CLASSES: Readonly<Record<string, string>> = {
  depth_anything: 'DepthAnythingPreprocessor',
  depth_anything_v2: 'DepthAnythingV2Preprocessor',
  depth_midas: 'MiDaS-DepthMapPreprocessor',
  depth_zoe: 'Zoe-DepthMapPreprocessor',
  depth_leres: 'LeReS-DepthMapPreprocessor',
  'depth_leres++': 'LeReS-DepthMapPreprocessor',
  normal_bae: 'BAE-NormalMapPreprocessor',
  normal_midas: 'MiDaS-NormalMapPreprocessor',
  normal_dsine: 'DSINE-NormalMapPreprocessor',
  lineart_realistic: 'LineArtPreprocessor',
  lineart_coarse: 'LineArtPreprocessor',
  lineart_standard: 'LineartStandardPreprocessor',
  lineart_anime: 'AnimeLineArtPreprocessor',
  lineart_anime_denoise: 'Manga2Anime_LineArt_Preprocessor',
  openpose: 'OpenposePreprocessor',
  openpose_face: 'OpenposePreprocessor',
  openpose_faceonly: 'OpenposePreprocessor',
  openpose_full: 'OpenposePreprocessor',
  openpose_hand: 'OpenposePreprocessor',
  dw_openpose_full: 'DWPreprocessor',
  animal_openpose: 'AnimalPosePreprocessor',
  densepose: 'DensePosePreprocessor',
  softedge_hed: 'HEDPreprocessor',
  softedge_hedsafe: 'HEDPreprocessor',
  softedge_pidinet: 'PiDiNetPreprocessor',
  softedge_pidisafe: 'PiDiNetPreprocessor',
  softedge_teed: 'TEEDPreprocessor',
  scribble_hed: 'ScribblePreprocessor',
  scribble_pidinet: 'Scribble_PiDiNet_Preprocessor',
  scribble_xdog: 'Scribble_XDoG_Preprocessor',
  mlsd: 'M-LSDPreprocessor',
  seg_ofade20k: 'OneFormer-ADE20K-SemSegPreprocessor',
  seg_ofcoco: 'OneFormer-COCO-SemSegPreprocessor',
  seg_ufade20k: 'UniFormer-SemSegPreprocessor',
  shuffle: 'ShufflePreprocessor',
  tile_resample: 'TilePreprocessor',
  mediapipe_face: 'MediaPipe-FaceMeshPreprocessor',
  binary: 'BinaryPreprocessor',
  color: 'ColorPreprocessor',
};

/** A preprocessor node the live ComfyUI has, as a unit or `/controlnet/detect` runs it. */
export interface PreprocessorNode {
  /** The module name the client sent (or the class name, for a class sent as the module). */
  module: string;
  classType: string;
  /** Whether the node declares `resolution` (processor_res goes there). */
  resolution: boolean;
}

/** comfyui_controlnet_aux's category prefix: a class there that takes an image is a preprocessor. */
const PREPROCESSOR_CATEGORY = /^ControlNet Preprocessors/;

function takesImage(info: ObjectInfo, cls: string): boolean {
  const spec = info[cls] ? inputSpec(info[cls], 'image') : undefined;
  return spec !== undefined && spec[0] === 'IMAGE';
}

/** The late-bound modules this ComfyUI offers: the table's modules whose class it has, then its preprocessor classes by name. */
export function livePreprocessors(info: ObjectInfo): PreprocessorNode[] {
  const out: PreprocessorNode[] = [];
  const node = (module: string, classType: string): PreprocessorNode => ({
    module,
    classType,
    resolution: inputSpec(info[classType]!, 'resolution') !== undefined,
  });
  for (const [module, cls] of Object.entries(AUX_PREPROCESSOR_CLASSES)) if (takesImage(info, cls)) out.push(node(module, cls));
  for (const [cls, n] of Object.entries(info)) {
    if (PREPROCESSOR_CATEGORY.test(typeof n.category === 'string' ? n.category : '') && takesImage(info, cls)) out.push(node(cls, cls));
  }
  return out;
}
