// Preload (NODE_OPTIONS=--require) that CPU-profiles the comfy-durable service process and writes
// BENCH_PROF_DIR/service-<pid>.cpuprofile on exit. --cpu-prof itself is not allowed in NODE_OPTIONS.
'use strict';
const { Session } = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');
if (process.argv.some((a) => a.endsWith('src/cli/main.ts') || a.endsWith('dist/cli/main.js'))) {
  const dir = process.env.BENCH_PROF_DIR || '/tmp';
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  process.on('exit', () => {
    session.post('Profiler.stop', (err, res) => {
      if (!err) fs.writeFileSync(path.join(dir, `service-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
