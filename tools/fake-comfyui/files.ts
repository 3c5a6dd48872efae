/**
 * The fake's data directories and ComfyUI's file-name rules (`folder_paths.py`): annotated names
 * (`x.png [output]`), the save-path counter, and the containment checks that keep every file inside its
 * directory. Path handling follows Python's `os.path` (absolute components reset the path, `normpath`
 * drops trailing slashes) because the differences decide what is accepted.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { trimTrailingSlashes } from '../../src/text/trim.ts';

export type DirType = 'input' | 'output' | 'temp';

export interface DataDirs {
  root: string;
  input: string;
  output: string;
  temp: string;
}

/** Creates the directories; wipes `temp/` like ComfyUI's `cleanup_temp` at startup. */
export function prepareDataDirs(root: string): DataDirs {
  const abs = path.resolve(root);
  const dirs: DataDirs = { root: abs, input: path.join(abs, 'input'), output: path.join(abs, 'output'), temp: path.join(abs, 'temp') };
  rmSync(dirs.temp, { recursive: true, force: true });
  for (const d of [dirs.input, dirs.output, dirs.temp]) mkdirSync(d, { recursive: true });
  return dirs;
}

export function dirByType(dirs: DataDirs, type: string): string | undefined {
  if (type === 'input' || type === 'output' || type === 'temp') return dirs[type];
  return undefined;
}

/** `folder_paths.annotated_filepath`: strips a ` [output]`/` [input]`/` [temp]` suffix and picks the dir. */
export function annotatedFilepath(dirs: DataDirs, name: string): { name: string; dir: string | undefined } {
  if (name.endsWith('[output]')) return { name: name.slice(0, -9), dir: dirs.output };
  if (name.endsWith('[input]')) return { name: name.slice(0, -8), dir: dirs.input };
  if (name.endsWith('[temp]')) return { name: name.slice(0, -7), dir: dirs.temp };
  return { name, dir: undefined };
}

/**
 * Resolves a LoadImage reference to a file path, or undefined when it would leave its directory (the real
 * server does not check this; a test fake must never read arbitrary files).
 */
export function resolveAnnotated(dirs: DataDirs, ref: string): string | undefined {
  const { name, dir } = annotatedFilepath(dirs, ref);
  const base = dir ?? dirs.input;
  const full = path.resolve(base, name);
  return isInside(base, full) ? full : undefined;
}

/** `folder_paths.exists_annotated_filepath` (LoadImage's VALIDATE_INPUTS). */
export function existsAnnotated(dirs: DataDirs, ref: string): boolean {
  const full = resolveAnnotated(dirs, ref);
  if (!full) return false;
  try {
    return statSync(full).isFile();
  } catch {
    return false;
  }
}

/** `os.path.commonpath((dir, p)) == dir` for absolute, resolved paths. */
export function isInside(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Python `os.path.normpath` for POSIX paths. */
export function pyNormpath(p: string): string {
  if (p === '') return '.';
  const n = path.posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function pyDirname(p: string): string {
  const i = p.lastIndexOf('/');
  if (i < 0) return '';
  const head = p.slice(0, i);
  return head === '' ? '/' : trimTrailingSlashes(head) || '/';
}

function pyBasename(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

export class SavePathError extends Error {}

export interface SavePath {
  fullOutputFolder: string;
  filename: string;
  counter: number;
  subfolder: string;
}

/**
 * `folder_paths.get_save_image_path`: expands the server-side `%width%`-style tokens, splits the prefix into
 * subfolder and file stem, refuses folders outside the output dir, and finds the next counter by scanning
 * existing `{stem}_{NNNNN}_*` files.
 */
export function getSaveImagePath(prefix: string, outputDir: string, width = 0, height = 0): SavePath {
  if (prefix.includes('%')) prefix = computeVars(prefix, width, height);
  const norm = pyNormpath(prefix);
  const subfolder = pyDirname(norm);
  const filename = pyBasename(norm);
  const fullOutputFolder = path.resolve(outputDir, subfolder);
  if (!isInside(outputDir, fullOutputFolder)) {
    throw new SavePathError(
      '**** ERROR: Saving image outside the output folder is not allowed.' +
        `\n full_output_folder: ${fullOutputFolder}` +
        `\n         output_dir: ${outputDir}` +
        `\n         commonpath: ${commonPath(outputDir, fullOutputFolder)}`,
    );
  }
  const prefixLen = pyBasename(prefix).length;
  let counter = 1;
  if (existsSync(fullOutputFolder)) {
    let best = -1;
    for (const f of readdirSync(fullOutputFolder)) {
      const head = f.slice(0, prefixLen + 1);
      if (head.slice(0, -1) !== filename || head.slice(-1) !== '_') continue;
      const digitsText = f.slice(prefixLen + 1).split('_')[0] ?? '';
      const digits = /^\d+$/.test(digitsText) ? Number(digitsText) : 0;
      best = Math.max(best, digits);
    }
    if (best >= 0) counter = best + 1;
  } else {
    mkdirSync(fullOutputFolder, { recursive: true });
  }
  return { fullOutputFolder, filename, counter, subfolder };
}

function commonPath(a: string, b: string): string {
  const pa = a.split('/');
  const pb = b.split('/');
  const out: string[] = [];
  for (let i = 0; i < Math.min(pa.length, pb.length) && pa[i] === pb[i]; i++) out.push(pa[i] as string);
  return out.join('/') || '/';
}

function computeVars(input: string, width: number, height: number): string {
  const now = new Date();
  const p2 = (n: number) => String(n).padStart(2, '0');
  return input
    .replaceAll('%width%', String(width))
    .replaceAll('%height%', String(height))
    .replaceAll('%year%', String(now.getFullYear()))
    .replaceAll('%month%', p2(now.getMonth() + 1))
    .replaceAll('%day%', p2(now.getDate()))
    .replaceAll('%hour%', p2(now.getHours()))
    .replaceAll('%minute%', p2(now.getMinutes()))
    .replaceAll('%second%', p2(now.getSeconds()));
}

const MIME: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.bmp': 'image/bmp',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
  '.svg': 'image/svg+xml',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mkv': 'video/x-matroska',
  '.mov': 'video/quicktime',
  '.wav': 'audio/x-wav',
  '.mp3': 'audio/mpeg',
  '.flac': 'audio/flac',
  '.ogg': 'audio/ogg',
  '.json': 'application/json',
  '.txt': 'text/plain',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
};

/** `mimetypes.guess_type` for the extensions that matter here. */
export function guessMime(filename: string): string | undefined {
  return MIME[path.extname(filename).toLowerCase()];
}

/** Files directly in a directory whose guessed type is an image (LoadImage's combo list), sorted. */
export function listImageFiles(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.startsWith('.') && (guessMime(e.name) ?? '').startsWith('image/'))
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
}

/** Visible files directly in a directory, newest first (`/internal/files/{type}`). */
export function listFilesByMtime(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && !e.name.startsWith('.'))
      .map((e) => ({ name: e.name, mtime: statSync(path.join(dir, e.name)).mtimeMs }))
      .sort((a, b) => b.mtime - a.mtime)
      .map((e) => e.name);
  } catch {
    return [];
  }
}
