import type { SessionEvent } from './session.js'

/**
 * The digest that binds a checkpoint to the event it ends at (R76): 64-bit FNV-1a over the UTF-8
 * bytes of the event's canonical JSON, `[seq, type, data]` with every object's keys sorted.
 *
 * Why these: the core runs outside Node too (browsers, edge runtimes), so `node:crypto` is not
 * available here and WebCrypto's digests are asynchronous, while attach is synchronous. FNV-1a is
 * a few lines, needs no table, is well studied for hashing keys, and two different events (a
 * checkpoint of another log, a log rewritten since) share a 64-bit digest only by a rare accident
 * (about one in 2^64). It is not cryptographic, and need not be: anyone who can write the
 * checkpoint store can compute any digest too, so a digest tells a misrouted or stale checkpoint,
 * never a forged one. The keys are sorted because stores
 * do not keep them in order (PostgreSQL's `jsonb` reorders them), and the data is read as
 * `JSON.stringify` reads it, which is what every durable log stores and reads back.
 */

/**
 * The canonical JSON of a value: what `JSON.stringify` writes (`toJSON` called; `undefined`,
 * functions and symbols left out of objects and `null` in arrays; non-finite numbers `null`),
 * with every object's keys in sorted order. Written by hand: a `JSON.stringify` replacer that
 * rebuilds each object sorted costs several times more, and attach digests one event.
 * @throws TypeError for a BigInt or a cycle, as `JSON.stringify` does; what a getter throws.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '', []) ?? 'null'
}

/** One value as canonical JSON, or undefined where JSON leaves it out. `ancestors` finds cycles. */
function write(value: unknown, key: string, ancestors: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null'
    case 'boolean':
      return value ? 'true' : 'false'
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt')
    case 'object':
      return value === null ? 'null' : writeObject(value, key, ancestors)
    default:
      return undefined // undefined, a function, a symbol
  }
}

function writeObject(value: object, key: string, ancestors: object[]): string | undefined {
  // What JSON.stringify writes for it: `toJSON`'s value (a Date's string), a boxed primitive's value.
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return write((value as { toJSON(key: string): unknown }).toJSON(key), key, ancestors)
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return write(value.valueOf(), key, ancestors)
  if (ancestors.includes(value)) throw new TypeError('Converting circular structure to JSON')
  ancestors.push(value)
  let text: string
  if (Array.isArray(value)) {
    text = '['
    for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + (write(value[i], String(i), ancestors) ?? 'null')
    text += ']'
  } else {
    text = '{'
    for (const name of Object.keys(value).sort()) {
      const member = write((value as Record<string, unknown>)[name], name, ancestors)
      if (member !== undefined) text += (text === '{' ? '' : ',') + JSON.stringify(name) + ':' + member
    }
    text += '}'
  }
  ancestors.pop()
  return text
}

const encoder = new TextEncoder()

/** 64-bit FNV-1a of `bytes`, as 16 hex digits; 32-bit halves, multiplied in 16-bit parts so that every step stays exact. */
export function fnv1a64(bytes: Uint8Array): string {
  // Offset basis 0xcbf29ce484222325; prime 0x100000001b3 = 2^40 + 0x1b3.
  let high = 0xcbf29ce4 | 0
  let low = 0x84222325 | 0
  for (let i = 0; i < bytes.length; i++) {
    low ^= bytes[i]!
    // (high·2^32 + low) · (2^40 + 0x1b3) mod 2^64: low·0x1b3 (its carry goes into high), high·0x1b3, and low·2^40 (low << 8 in high).
    const lowPart = (low & 0xffff) * 0x1b3
    const highPart = (low >>> 16) * 0x1b3 + (lowPart >>> 16)
    high = (Math.imul(high, 0x1b3) + (highPart >>> 16) + (low << 8)) | 0
    low = ((highPart & 0xffff) << 16) | (lowPart & 0xffff)
  }
  return (high >>> 0).toString(16).padStart(8, '0') + (low >>> 0).toString(16).padStart(8, '0')
}

/**
 * The digest of one log event (R76): `fnv1a64:` and 16 hex digits.
 * @throws what reading the event's data throws (a getter, a BigInt, a cycle): such an event can
 *   end no checkpoint.
 */
export function eventDigest(event: SessionEvent): string {
  return `fnv1a64:${fnv1a64(encoder.encode(canonicalJson([event.seq, event.type, event.data])))}`
}
