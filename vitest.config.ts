import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration suites start real processes (Temporal dev server, fake ComfyUI, the service): give them time,
    // and run files in separate processes so a killed child never takes a neighbour down.
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // 2 cores: more parallel files only contend with the servers they start.
    maxWorkers: 2,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
