/** The first frame of an MP4 as a PNG, through `ffmpeg` (`FFMPEG_PATH` overrides the binary). */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export async function firstVideoFrame(mp4: Buffer): Promise<Buffer> {
  // A file, not a pipe: an MP4 may keep its index at the end, which a pipe cannot seek to.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-frame-'));
  try {
    const input = path.join(dir, 'in.mp4');
    writeFileSync(input, mp4);
    const args = ['-v', 'error', '-i', input, '-frames:v', '1', '-f', 'image2pipe', '-vcodec', 'png', 'pipe:1'];
    const child = spawn(process.env.FFMPEG_PATH ?? 'ffmpeg', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0) throw new Error(`ffmpeg exited ${code}: ${Buffer.concat(err).toString().slice(0, 300)}`);
    return Buffer.concat(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
