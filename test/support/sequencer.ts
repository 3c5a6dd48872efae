/**
 * The order test files start in: files that start real processes (Temporal, the service, the fake ComfyUI,
 * servers built from Go) take minutes, unit files seconds, so the former go first and the unit files fill the
 * workers at the end. Within each group vitest's own order holds: longest first by the last run's durations,
 * by file size on a fresh clone (which has no durations yet). Without this a fresh clone could start a
 * minutes-long file last, after every worker had run out of short ones.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const REAL_PROCESSES = /^test\/(cluster|fuzz|faults|integration|e2e|blobs|conformance|workflows)\//;

export default class RealProcessesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const weight = (f: TestSpecification): number => (REAL_PROCESSES.test(path.relative(this.ctx.config.root, f.moduleId).split(path.sep).join('/')) ? 0 : 1);
    return ordered
      .map((file, i) => ({ file, i, w: weight(file) }))
      .sort((a, b) => a.w - b.w || a.i - b.i)
      .map((x) => x.file);
  }
}
