/**
 * Where the login page may send someone back to. `next` arrives in a URL anyone can craft, so only a path on
 * this server is accepted: one leading '/', and no second '/' or '\' after it (browsers read `//evil.example`
 * and `/\evil.example` as another host). Anything else goes to the runs list.
 */
export function safeNextPath(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2048) return '/';
  if (!raw.startsWith('/') || raw.startsWith('//') || raw.startsWith('/\\')) return '/';
  // Control characters and backslashes have no place in our own paths; browsers strip or rewrite some of them.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this refuses
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) return '/';
  return raw;
}
