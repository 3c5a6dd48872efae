/** ffprobe's reading of a media file (streams, frame counts, durations, tags): the playability check. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ProbedStream {
  index: number;
  /** `video`, `audio`, … */
  codec_type: string;
  codec_name: string;
  profile?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  time_base?: string;
  nb_frames?: string;
  /** Frames actually decoded (`-count_frames`): proves the stream plays to the end. */
  nb_read_frames?: string;
  duration?: string;
  sample_rate?: string;
  channels?: number;
  channel_layout?: string;
  color_transfer?: string;
}

export interface Probe {
  streams: ProbedStream[];
  format: { format_name: string; duration: string; tags?: Record<string, string> };
}

export async function ffprobe(file: string): Promise<Probe> {
  const bin = process.env.FFPROBE_PATH || 'ffprobe';
  const { stdout } = await run(bin, ['-v', 'error', '-count_frames', '-show_streams', '-show_format', '-of', 'json', file], { maxBuffer: 16 * 1024 * 1024 });
  return JSON.parse(stdout) as Probe;
}

export const videoStream = (p: Probe): ProbedStream | undefined => p.streams.find((s) => s.codec_type === 'video');
export const audioStream = (p: Probe): ProbedStream | undefined => p.streams.find((s) => s.codec_type === 'audio');
