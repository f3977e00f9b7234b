/**
 * `xstate-plan-mode/testing`: the conformance kit for hosts, as vitest suites (vitest is a peer
 * dependency). The scenarios themselves are plain async functions that throw
 * (`xstate-plan-mode/testing/scenarios`, re-exported here); `defineConformanceSuite` and
 * `defineDurableReviewSuite` make one vitest test of each. For `node:test`:
 * `xstate-plan-mode/testing/node`. The guide is on the exports (`conformanceScenarios`,
 * `ConformanceAgent` and its members), so that it ships in the type declarations.
 *
 * @module xstate-plan-mode/testing
 */
import { describe, it } from 'vitest'
import type { ConformanceSuiteOptions, DurableReviewSuiteOptions } from './scenarios.js'
import { conformanceSuite, durableReviewSuite } from './suites.js'

export * from './scenarios.js'

/**
 * Defines SPEC's observable scenario suite (`conformanceScenarios`) as vitest tests, one per
 * scenario, named by rule (`R16: …`), in a `describe` named for the host. Call it at the top level
 * of a test file.
 *
 * ```ts
 * // test/conformance.test.ts of a host
 * import { defineConformanceSuite } from 'xstate-plan-mode/testing'
 *
 * defineConformanceSuite({
 *   name: 'my host',
 *   createHost: () => ({
 *     section: MY_SECTION,               // the section the host passed to createPlanMode
 *     createAgent: () => myDriver(),     // a ConformanceAgent over a fresh session
 *   }),
 * })
 * ```
 */
export function defineConformanceSuite(options: ConformanceSuiteOptions): void {
  conformanceSuite({ describe, it }, options)
}

/**
 * Defines the durable-review scenarios (`durableReviewScenarios`, R78–R81; told in the call's
 * result with `toldInResult: true`, R135) as vitest tests, one per scenario, named by rule.
 *
 * ```ts
 * defineDurableReviewSuite({
 *   name: 'my web app',
 *   createHost: () => ({ section: MY_SECTION, createAgent: () => myDurableDriver(newSessionLog()) }),
 * })
 * ```
 */
export function defineDurableReviewSuite(options: DurableReviewSuiteOptions): void {
  durableReviewSuite({ describe, it }, options)
}
export * from './log-suite.js'
