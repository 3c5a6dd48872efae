/**
 * How this service names a render's files to ComfyUI's clients: `<sha256>.<ext>`, the blob's own address, so
 * `/view` needs no table and a name stays valid for as long as the blob is kept (retention).
 */
import type { BlobRef } from '../../contracts/render.ts';

const EXT_OF_MIME: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/webm': 'webm',
  'video/x-matroska': 'mkv',
  'video/quicktime': 'mov',
  'audio/mpeg': 'mp3',
  'audio/flac': 'flac',
  'audio/wav': 'wav',
  'audio/ogg': 'ogg',
  'audio/mp4': 'm4a',
};
const MIME_OF_EXT = Object.fromEntries(Object.entries(EXT_OF_MIME).map(([m, e]) => [e, m]));

export function fileNameOf(ref: Pick<BlobRef, 'sha256' | 'mime'>): string {
  return `${ref.sha256}.${EXT_OF_MIME[ref.mime] ?? 'bin'}`;
}

/** The blob a `/view` file name means, with its type; undefined for any other name. */
export function blobOfFileName(name: string): { sha256: string; mime: string } | undefined {
  const m = /^([0-9a-f]{64})\.([a-z0-9]{2,5})$/.exec(name);
  if (!m) return undefined;
  return { sha256: m[1]!, mime: MIME_OF_EXT[m[2]!] ?? 'application/octet-stream' };
}
