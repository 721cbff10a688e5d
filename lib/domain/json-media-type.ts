/**
 * Which Content-Type a JSON body may be sent with: one rule for the control API's bodies (lib/api/body.ts) and
 * the model gateway's requests (lib/gateway/handler.ts), so a client learns it once.
 */

/**
 * Why a body sent with this Content-Type is not read as JSON, or null when it is. Read: no Content-Type at all
 * (a client that sends none), and `application/json` or `application/<name>+json` (RFC 6839) with any parameters
 * but a charset other than UTF-8, the one charset JSON has (RFC 8259 §8.1). Refused: anything else, which says
 * the body is something else (form fields, text in another encoding). Type, subtype and parameter names are
 * case-insensitive; a charset is any label the Encoding Standard reads as UTF-8 (`utf-8`, `UTF8`, `"utf-8"`).
 */
export function jsonMediaTypeProblem(contentType: string | null): string | null {
  if (contentType === null) return null;
  const sent = `Content-Type ${JSON.stringify(contentType)}`;
  const [essence = '', ...parameters] = contentType.split(';');
  if (!/^application\/(?:[\w.!#$&^+-]+\+)?json$/i.test(essence.trim()))
    return `${sent} is not JSON: send application/json (or application/<name>+json), or no Content-Type`;
  for (const parameter of parameters) {
    const [name = '', value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() !== 'charset') continue;
    const label = value.trim().replace(/^"(.*)"$/, '$1');
    if (!isUtf8(label))
      return `${sent} is not UTF-8, the one charset a JSON body has: send charset=utf-8, or no charset`;
  }
  return null;
}

function isUtf8(label: string): boolean {
  try {
    return new TextDecoder(label).encoding === 'utf-8';
  } catch {
    return false;
  }
}
