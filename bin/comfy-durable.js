#!/usr/bin/env node
// Runs the TypeScript CLI in this very process (tsx's loader registered in-process, no child process), so
// signals reach the CLI's own drain-on-SIGTERM handling and `npx comfy-durable ...` needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
