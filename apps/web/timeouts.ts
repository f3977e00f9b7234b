/**
 * The web chat's bounded waits: the turn lease (`turnLeaseMs`) is a timer's delay, so it must be a
 * number of milliseconds a timer keeps, and a stream's end is awaited at most that long. The app's
 * own copy of the library's internal `src/timeouts.ts` (not a public entry point): an app stands on
 * the package's public entry points only (test/layout.test.ts).
 */

/** The longest delay `setTimeout` keeps (2^31 - 1 ms, about 24.8 days): a longer one fires at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647

/** Resolves `true` when `promise` settles, `false` once `ms` have passed first; never rejects. */
export function waitAtMost(ms: number, promise: PromiseLike<unknown>): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    const done = () => {
      clearTimeout(timer)
      resolve(true)
    }
    promise.then(done, done)
  })
}
