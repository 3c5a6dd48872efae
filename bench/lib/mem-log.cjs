// Preload (NODE_OPTIONS=--require) for the comfy-durable service process: appends process.memoryUsage()
// as a JSON line to BENCH_MEM_LOG.<pid> every 250 ms, from every thread that loads it (`start`'s worker
// thread and the byte-pool threads too: NODE_OPTIONS reaches worker threads), each line naming its thread
// (0: the front's main thread).
// `rss` is the whole process's; the heap figures are the thread's own isolate's.
// With BENCH_MEM_GC=1 it forces a full GC before each sample (every second) so the figures show what is
// retained rather than garbage not yet collected.
'use strict';
const fs = require('node:fs');
const { isMainThread, threadId } = require('node:worker_threads');
const service = /(src\/cli\/main\.ts|dist\/cli\/main\.js)$/;
// A worker thread's preload runs before its process.argv names its script, so any thread of a service
// process logs (the worker thread, the byte-pool threads): only the service got BENCH_MEM_LOG.
if ((!isMainThread || process.argv.some((a) => service.test(a))) && process.env.BENCH_MEM_LOG) {
  const file = `${process.env.BENCH_MEM_LOG}.${process.pid}`;
  let gc;
  if (process.env.BENCH_MEM_GC === '1') {
    require('node:v8').setFlagsFromString('--expose_gc');
    gc = require('node:vm').runInNewContext('gc');
  }
  const t = setInterval(
    () => {
      if (gc) gc();
      const m = process.memoryUsage();
      fs.appendFileSync(file, `${JSON.stringify({ at: Date.now(), thread: threadId, ...m })}\n`);
    },
    gc ? 1000 : 250,
  );
  t.unref();
}
