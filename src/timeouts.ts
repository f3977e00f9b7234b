/**
 * Bounded waits (R73, R83, R91): a port that never settles must not hold a close, an append or a
 * tool call forever. One home for the bound a timer can keep and for the wait itself.
 */

/** The longest delay `setTimeout` keeps (2^31 - 1 ms, about 24.8 days): a longer one fires at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647

/** Whether `value` is a number of milliseconds a timer keeps: from 0 to {@link MAX_TIMEOUT_MS}. */
export function isTimeoutMs(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && value <= MAX_TIMEOUT_MS
}

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
