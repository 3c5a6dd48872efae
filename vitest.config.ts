import { defineConfig } from 'vitest/config';
import RealProcessesFirst from './test/support/sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration suites start real processes (Temporal dev server, fake ComfyUI, the service): give them time,
    // and run files in separate processes so a killed child never takes a neighbour down.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Three files at a time on 2 cores: the real-process suites spend most of their time waiting on processes
    // and timeouts (a fault file uses about a third of a core), so a third file fills the cores they leave idle.
    maxWorkers: 3,
    sequence: { sequencer: RealProcessesFirst },
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
