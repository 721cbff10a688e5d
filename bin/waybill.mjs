#!/usr/bin/env node
// The waybill CLI: the built dist/cli.js, or in a checkout with no fresh build the sources through tsx
// (bin/entry.mjs says which).
import { entry } from './entry.mjs';

const { runCli } = await entry('cli', 'lib/cli/main.ts', ['zod', 'better-sqlite3']);
await runCli(process.argv.slice(2));
