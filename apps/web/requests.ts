/**
 * What the web chat takes from a request (R104), in one place for its instances (`apps/web/server.ts`)
 * and the cluster's proxy in front of them (`apps/web/cluster.ts`): a request one refuses, the other
 * refuses too, with the same status and text.
 */
import type { IncomingMessage } from 'node:http'

/** Loopback names only: a page on another site that rebinds its DNS name to 127.0.0.1 gets nothing. */
const LOOPBACK_HOST = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d+)?$/i

/** The 421 answer's text. */
export const HOST_REFUSED = 'this server answers only to 127.0.0.1 and localhost'

/** Whether a `Host` header names this machine's loopback (DNS-rebinding protection). */
export function isLoopbackHost(host: string | undefined): boolean {
  return host !== undefined && LOOPBACK_HOST.test(host)
}

/** The largest request body, in bytes, that an instance reads and the proxy forwards: 4 MiB. */
export const MAX_BODY = 4 * 1024 * 1024

/** The 413 answer's text. */
export const BODY_TOO_LARGE = 'request body too large'

/** The 403 answer's text. */
export const CROSS_SITE_REFUSED = 'cross-site request refused'

/**
 * Whether a request comes from this server's own page: its `Origin` is `http://<its Host>`. A
 * browser sends `Origin` with every POST, also a same-origin one; a request without it, or with
 * `null` (a sandboxed or file page) or another site's, is not the page's (cross-site request
 * forgery: a form or a `text/plain` fetch from another site needs no CORS preflight).
 */
export function isSameOrigin(req: IncomingMessage): boolean {
  const { origin, host } = req.headers
  return typeof origin === 'string' && typeof host === 'string' && origin.toLowerCase() === `http://${host.toLowerCase()}`
}

/** The 415 answer's text. */
export const NOT_JSON = 'the body must be JSON (content-type: application/json)'

/** Whether a `Content-Type` is JSON (`application/json`, with parameters or without). */
export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(?:;|$)/i.test(contentType)
}

/** How deeply a JSON body may nest arrays and objects. */
export const MAX_JSON_DEPTH = 64

/** The 400 answer's text for a body nested deeper. */
export const TOO_DEEP = `the body is nested too deeply (at most ${MAX_JSON_DEPTH} levels)`

/**
 * Whether a JSON text nests arrays and objects deeper than `max`, found in one pass over the text
 * without recursion: whatever recurses over the parsed value later (a serializer, a validator)
 * would overflow its stack on a body nested 100,000 deep. Brackets inside strings do not count.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) {
      depth--
    }
  }
  return false
}
