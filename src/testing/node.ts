/**
 * `xstate-plan-mode/testing/node`: the conformance kit for hosts as `node:test` suites, for a host
 * tested with `node --test` and no other runner. The scenarios are the plain async functions of
 * `xstate-plan-mode/testing/scenarios` (re-exported here); these wrappers make one `node:test`
 * test of each, the same suites `xstate-plan-mode/testing` makes for vitest.
 *
 * @module xstate-plan-mode/testing/node
 */
import { describe, it } from 'node:test'
import {
  conformanceScenarios,
  durableReviewScenarios,
  type ConformanceScenario,
  type ConformanceSuiteOptions,
  type DurableReviewSuiteOptions,
} from './scenarios.js'

export * from './scenarios.js'

/** One `node:test` test per scenario; a scenario that does not apply to the driver is skipped with its reason. */
function nodeTests(suite: string, scenarios: readonly ConformanceScenario[]): void {
  void describe(suite, () => {
    for (const { title, run } of scenarios) {
      void it(title, async (context) => {
        const result = await run()
        if ('skipped' in result) context.skip(result.skipped)
      })
    }
  })
}

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
  nodeTests(`xstate-plan-mode conformance: ${options.name}`, conformanceScenarios(options))
}

/** Defines the durable-review scenarios (`durableReviewScenarios`, R78–R81, R135) as `node:test` tests, one per scenario. */
export function defineDurableReviewSuite(options: DurableReviewSuiteOptions): void {
  const told = options.toldInResult === true ? ' told in the result' : ''
  nodeTests(`xstate-plan-mode durable reviews${told}: ${options.name}`, durableReviewScenarios(options))
}
