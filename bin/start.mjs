#!/usr/bin/env node
// `npm start`: builds the dashboard if needed, then runs it and one worker until Ctrl-C. The work is in
// lib/launch/start.ts, built into dist/start.js or run through tsx (bin/entry.mjs says which).
import { entry } from './entry.mjs';

const { launch } = await entry('start', 'lib/launch/start.ts', ['zod', 'better-sqlite3']);
process.exitCode = await launch(process.argv.slice(2));
