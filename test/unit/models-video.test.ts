import { describe, expect, it } from 'vitest';
import { getProfile, listVideoProfiles } from '../../src/models/registry.ts';
import { modelsWithTask, progressAfterSampler, videoTasksOf } from '../../src/models/video-tasks.ts';
import { framesForSeconds, secondsLabel, sizeFromImage, snapFrames } from '../../src/models/video.ts';

const wan = getProfile('videogen-wan22-5b')!;
const h3 = getProfile('videogen-minimax-h3')!;

describe('video frame grids', () => {
  it('Wan floors to 4k+1: 5 s at 24 fps = 120 → 121; 81 stays; 84 → 85 (floor(n/4)·4+1)', () => {
    const g = wan.video!.frameGrid;
    expect(snapFrames(framesForSeconds(5, 24), g)).toBe(121);
    expect(snapFrames(81, g)).toBe(81);
    expect(snapFrames(84, g)).toBe(85);
    expect(snapFrames(83, g)).toBe(81);
    expect(snapFrames(1, g)).toBe(1);
  });

  it('H3 rounds up to 17k+5: 4 s → 107, 5 s → 124, 8.7 s → 209, 15 s → 362', () => {
    const g = h3.video!.frameGrid;
    expect([4, 5, 8.7, 15].map((s) => snapFrames(framesForSeconds(s, 24), g))).toEqual([107, 124, 209, 362]);
    expect(snapFrames(22, g)).toBe(22);
    expect(snapFrames(23, g)).toBe(39);
    expect(snapFrames(3, g)).toBe(5);
  });

  it('reported seconds: frames / fps with 3 decimals', () => {
    expect(secondsLabel(124, 24)).toBe('5.167');
    expect(secondsLabel(121, 24)).toBe('5.042');
    expect(secondsLabel(48, 24)).toBe('2');
  });

  it('size from a conditioning image: Wan keeps the aspect within 1280×704 px area, H3 short edge 768; both on the 32 grid', () => {
    expect(sizeFromImage(wan, { width: 1920, height: 1080 })).toEqual({ width: 1248, height: 704 });
    expect(sizeFromImage(wan, { width: 704, height: 1280 })).toEqual({ width: 704, height: 1280 });
    expect(sizeFromImage(h3, { width: 1920, height: 1080 })).toEqual({ width: 1344, height: 768 });
    expect(sizeFromImage(h3, { width: 600, height: 800 })).toEqual({ width: 768, height: 1024 });
    for (const s of [sizeFromImage(wan, { width: 333, height: 777 }), sizeFromImage(h3, { width: 4000, height: 500 })]) {
      expect(s.width % 32).toBe(0);
      expect(s.height % 32).toBe(0);
    }
  });
});

describe('what the video API asks the models', () => {
  it('every video profile: its tasks are ones its family declares, with one text-only task', () => {
    for (const p of listVideoProfiles()) {
      const tasks = videoTasksOf(p);
      expect(tasks.map((t) => t.id)).toEqual(p.video!.tasks);
      expect(tasks.filter((t) => t.images === 'none')).toHaveLength(1);
    }
  });

  it('progress after the sampler comes from the family: H3 decodes audio, Wan has no such node', () => {
    expect(progressAfterSampler(h3.id, 'decode_audio')).toBe(92);
    expect(progressAfterSampler(wan.id, 'decode_audio')).toBeUndefined();
    for (const p of listVideoProfiles()) {
      expect(progressAfterSampler(p.id, 'decode')).toBe(90);
      expect(progressAfterSampler(p.id, 'save')).toBe(96);
      expect(progressAfterSampler(p.id, 'sampler')).toBeUndefined();
      expect(progressAfterSampler(p.id, 'toString')).toBeUndefined();
    }
    expect(progressAfterSampler('no-such-model', 'decode')).toBeUndefined();
  });

  it('models with a task of a kind, for error messages', () => {
    expect(modelsWithTask('references')).toContain(`${h3.id} ref2va`);
    expect(modelsWithTask('references')).not.toContain(`${wan.id} i2v`);
  });
});
