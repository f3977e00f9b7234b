/**
 * `xstate-plan-mode/testing/node`: the conformance kit for hosts as `node:test` suites, for a host
 * tested with `node --test` and no other runner. The scenarios are the plain async functions of
 * `xstate-plan-mode/testing/scenarios` (re-exported here); these wrappers make one `node:test`
 * test of each, the same suites `xstate-plan-mode/testing` makes for vitest.
 *
 * @module xstate-plan-mode/testing/node
 */
import { describe, it } from 'node:test'
import type { ConformanceSuiteOptions, DurableReviewSuiteOptions } from './scenarios.js'
import { conformanceSuite, durableReviewSuite } from './suites.js'

export * from './scenarios.js'

/**
 * Defines SPEC's observable scenario suite (`conformanceScenarios`) as `node:test` tests, one per
 * scenario, named by rule. Call it at the top level of a file `node --test` runs.
 *
 * ```ts
 * // conformance.test.mjs of a host: node --test
 * import { defineConformanceSuite } from 'xstate-plan-mode/testing/node'
 *
 * defineConformanceSuite({ name: 'my host', createHost: () => ({ section: MY_SECTION, createAgent: () => myDriver() }) })
 * ```
 */
export function defineConformanceSuite(options: ConformanceSuiteOptions): void {
  conformanceSuite({ describe, it }, options)
}

/** Defines the durable-review scenarios (`durableReviewScenarios`, R78–R81, R135) as `node:test` tests, one per scenario. */
export function defineDurableReviewSuite(options: DurableReviewSuiteOptions): void {
  durableReviewSuite({ describe, it }, options)
}
