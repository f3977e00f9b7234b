import { afterEach, vi } from 'vitest'

/**
 * Files of the `shared` project run one after another in one module graph (vitest.config.ts,
 * `isolate: false`): a test that ends without restoring real timers (one stopped by its hang guard
 * before its `finally`) must not leave the next files on fake ones.
 */
afterEach(() => {
  vi.useRealTimers()
})
