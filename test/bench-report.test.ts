import { describe, expect, it } from 'vitest'
// @ts-expect-error: the bench is plain JavaScript, without declarations
import { isMet } from '../bench/report.mjs'

/** A target as `evaluate` makes it (bench/report.mjs), from the medians of both sides. */
function target(lib: number, floor: number, extra: Record<string, unknown> = {}) {
  return { ratio: lib / floor, bound: 1.1, lib: { median: lib, p90: lib }, floor: { median: floor, p90: floor }, ...extra }
}

describe('bench: judging a target (bench/report.mjs)', () => {
  it('a ratio within its bound is met, one over it is not', () => {
    expect(isMet(target(7.5, 7.0))).toBe(true)
    expect(isMet(target(8.0, 7.0))).toBe(false)
    expect(isMet(target(7.5, 7.0, { worstRatio: 1.2 }))).toBe(false)
    expect(isMet(target(7.5, 7.0, { meanRatio: 1.2 }))).toBe(false)
  })

  it('a side measured at zero or less is never met: stop 36 published a heap of -488364 B as a pass', () => {
    expect(isMet(target(-488364, 7_916_000, { worstRatio: -244144 / 7_916_000, lib: { median: -488364, p90: -244144, min: -502040 } }))).toBe(false)
    expect(isMet(target(0, 7_916_000))).toBe(false)
    expect(isMet(target(7.5, 0))).toBe(false)
    // One reading below zero among good ones (the median hides it): the worst reading decides.
    expect(isMet(target(8_000_000, 7_916_000, { worstRatio: 1.01, lib: { median: 8_000_000, p90: 8_100_000, min: -1 } }))).toBe(false)
  })
})
