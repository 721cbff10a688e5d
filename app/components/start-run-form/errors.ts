/** The server's field errors, split by the part of the form that shows them. */
export type InputError = { path: string; message: string };

/** Which field an error key belongs to: `input` and `input.<path>` to the editor, the rest by name. */
export function splitErrors(errors: Record<string, string[]>) {
  const input: InputError[] = [];
  const byField: Record<'workflow' | 'id' | 'tags', string[]> = { workflow: [], id: [], tags: [] };
  const other: string[] = [];
  for (const [key, messages] of Object.entries(errors)) {
    for (const message of messages) {
      if (key === 'input' || key.startsWith('input.')) input.push({ path: key.slice('input.'.length), message });
      else if (key === 'workflow' || key === 'id') byField[key].push(message);
      // Tags and metadata share one line under their two fields, each error with its field's name.
      else if (/^(tags|metadata)(\.|$)/.test(key)) byField.tags.push(`${key}: ${message}`);
      else other.push(key ? `${key}: ${message}` : message);
    }
  }
  return { input, workflow: byField.workflow, id: byField.id, tags: byField.tags, other };
}
