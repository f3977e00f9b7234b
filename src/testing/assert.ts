import { AssertionError } from 'node:assert'

/**
 * The kit's assertions, with no test runner: each throws an `AssertionError` carrying `actual`
 * and `expected`, which vitest, `node:test` and jest show as a diff.
 */

/** Deep equality as the kit means it: plain data compared by value, an own property holding `undefined` counted as absent. */
function deepEqual(actual: unknown, expected: unknown): boolean {
  if (Object.is(actual, expected)) return true
  if (typeof actual !== 'object' || typeof expected !== 'object' || actual === null || expected === null) return false
  if (Array.isArray(actual) !== Array.isArray(expected)) return false
  if (Array.isArray(actual)) {
    const other = expected as unknown[]
    return actual.length === other.length && actual.every((item, i) => deepEqual(item, other[i]))
  }
  const defined = (value: object) => Object.keys(value).filter((key) => (value as Record<string, unknown>)[key] !== undefined)
  const keys = defined(actual)
  const expectedKeys = defined(expected)
  return (
    keys.length === expectedKeys.length &&
    keys.every((key) => expectedKeys.includes(key) && deepEqual((actual as Record<string, unknown>)[key], (expected as Record<string, unknown>)[key]))
  )
}

/** Whether `actual` holds everything `expected` holds (objects recursively; arrays and the rest compared whole). */
function matches(actual: unknown, expected: unknown): boolean {
  if (typeof expected !== 'object' || expected === null || Array.isArray(expected)) return deepEqual(actual, expected)
  if (typeof actual !== 'object' || actual === null) return false
  return Object.entries(expected).every(([key, value]) => matches((actual as Record<string, unknown>)[key], value))
}

/** `actual` equals `expected` as plain data. */
export function equal(actual: unknown, expected: unknown): void {
  if (!deepEqual(actual, expected)) throw new AssertionError({ message: 'expected the host to give the value the spec gives', actual, expected, operator: 'deepEqual' })
}

/** `actual` holds every field of `expected`. */
export function match(actual: unknown, expected: unknown): void {
  if (!matches(actual, expected)) throw new AssertionError({ message: 'expected the host to give a value holding the fields the spec gives', actual, expected, operator: 'match' })
}

/** `actual` is `expected` (`Object.is`). */
export function same(actual: unknown, expected: unknown): void {
  if (!Object.is(actual, expected)) throw new AssertionError({ message: 'expected the host to give the value the spec gives', actual, expected, operator: 'strictEqual' })
}

/** `actual` is `null`. */
export function isNull(actual: unknown): void {
  same(actual, null)
}
