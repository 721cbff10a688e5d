/**
 * One JSON request to a real server, as an outside client sends it: a bearer token or none, a JSON body or
 * none. The answer's body is parsed JSON, read field by field by the assertions.
 */
// biome-ignore lint/suspicious/noExplicitAny: an API answer, checked by the test's own assertions
export type Answer = { status: number; body: any };

export async function request(
  base: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(base + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: {
      ...headers,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
