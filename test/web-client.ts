/**
 * A browser on the web chat's page, for tests that talk to its server with plain `fetch`: it sends
 * the page's own `Origin` with every request and keeps the owner cookie the server sets (R103,
 * R104), as the page's same-origin requests do.
 */
export function webClient(base: string, { cookie: initial }: { cookie?: string } = {}) {
  let cookie = initial
  const send = async (path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) => {
    const response = await fetch(new URL(path, base), {
      method: init.method ?? 'GET',
      headers: { origin: new URL(base).origin, ...(cookie ? { cookie } : {}), ...init.headers },
      ...(init.body !== undefined ? { body: init.body } : {}),
    })
    for (const set of response.headers.getSetCookie()) {
      const pair = set.split(';')[0]!
      if (pair.startsWith('plan_mode_owner=')) cookie = pair
    }
    return response
  }
  return {
    /** The owner cookie this browser holds (`name=value`), if any. */
    get cookie() {
      return cookie
    },
    /** A request with the page's Origin and the cookie, and `init` as given. */
    send,
    get: (path: string) => send(path),
    /** A JSON POST, as the page's `fetch` and `useChat` send it. */
    post: (path: string, body: unknown) => send(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  }
}

/** A {@link webClient}. */
export type WebClient = ReturnType<typeof webClient>
