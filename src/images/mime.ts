/** Image mime helpers without Node dependencies (plan.ts runs wherever graphs are built). */

/** File extension for a mime type (content-addressed ComfyUI input names). */
export function extensionForMime(mime: string): string {
  switch (mime) {
    case 'image/png':
      return 'png';
    case 'image/jpeg':
      return 'jpg';
    case 'image/webp':
      return 'webp';
    default:
      throw new Error(`no file extension for ${mime}`);
  }
}
