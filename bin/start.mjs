#!/usr/bin/env node
// `npm start`: builds the dashboard if needed, then runs it and one worker until Ctrl-C. The work is in
// lib/launch/start.ts; tsx compiles it on import, as in bin/waybill.mjs.
import { register } from 'tsx/esm/api';

await Promise.all([import('zod'), import('better-sqlite3')]);
register();
const { launch } = await import('../lib/launch/start.ts');
process.exitCode = await launch(process.argv.slice(2));
