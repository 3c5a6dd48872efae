/**
 * Output writers of the fake: SaveImage and PreviewImage write real PNGs (pixels from the upstream content
 * signature, `prompt` / `extra_pnginfo` as tEXt chunks like PIL). Registered into the node table, so another
 * file can add or replace one without touching the executor (video.ts registers SaveVideo and SaveAudio).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { getSaveImagePath, SavePathError } from './files.ts';
import type { FakeValue, NodeRunCtx } from './nodes.ts';
import { need, NodeException, registerNodes, str } from './nodes.ts';
import { renderPng } from './png.ts';
import { pyJsonDumps } from './pyjson.ts';

const PREVIEW_CHARS = 'abcdefghijklmnopqrstupvxyz';

/** Python `json.dumps` text as SaveImage embeds it. */
export function pngText(n: NodeRunCtx): Record<string, string> {
  const text: Record<string, string> = { prompt: pyJsonDumps(n.prompt) };
  const pnginfo = n.extraData.extra_pnginfo;
  if (pnginfo && typeof pnginfo === 'object' && !Array.isArray(pnginfo)) {
    for (const [k, v] of Object.entries(pnginfo)) text[k] = pyJsonDumps(v);
  }
  return text;
}

export async function saveImages(
  n: NodeRunCtx,
  images: Extract<FakeValue, { kind: 'image' }>,
  dir: string,
  prefix: string,
  type: 'output' | 'temp',
  deflateLevel: number,
): Promise<Array<{ filename: string; subfolder: string; type: string }>> {
  let sp;
  try {
    sp = getSaveImagePath(prefix, dir, images.width, images.height);
  } catch (err) {
    if (err instanceof SavePathError) throw new NodeException('Exception', err.message);
    throw err;
  }
  const results: Array<{ filename: string; subfolder: string; type: string }> = [];
  const text = pngText(n);
  let counter = sp.counter;
  for (let b = 0; b < images.count; b++) {
    const file = `${sp.filename.replaceAll('%batch_num%', String(b))}_${String(counter).padStart(5, '0')}_.png`;
    const png = renderPng({ width: images.width, height: images.height, contentKey: `${images.sig}#${b}`, text, deflateLevel, alpha: images.alpha });
    await writeFile(path.join(sp.fullOutputFolder, file), png);
    results.push({ filename: file, subfolder: sp.subfolder, type });
    counter++;
  }
  return results;
}

registerNodes({
  SaveImage: async (n) => {
    const images = need(n, 'images', 'image');
    const results = await saveImages(n, images, n.dirs.output, str(n, 'filename_prefix', 'ComfyUI'), 'output', 4);
    return { outputs: [images], ui: { images: results } };
  },
  PreviewImage: async (n) => {
    const images = need(n, 'images', 'image');
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += PREVIEW_CHARS[Math.floor(Math.random() * PREVIEW_CHARS.length)];
    const results = await saveImages(n, images, n.dirs.temp, `ComfyUI_temp_${suffix}`, 'temp', 1);
    return { outputs: [images], ui: { images: results } };
  },
});
