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
import {
  conformanceScenarios,
  durableReviewScenarios,
  type ConformanceScenario,
  type ConformanceSuiteOptions,
  type DurableReviewSuiteOptions,
} from './scenarios.js'

export * from './scenarios.js'

/** One vitest test per scenario; a scenario that does not apply to the driver is skipped with its reason. */
function vitestTests(suite: string, scenarios: readonly ConformanceScenario[]): void {
  describe(suite, () => {
    for (const { title, run } of scenarios) {
      it(title, async (context) => {
        const result = await run()
        if ('skipped' in result) context.skip(result.skipped)
      })
    }
  })
}

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
  vitestTests(`xstate-plan-mode conformance: ${options.name}`, conformanceScenarios(options))
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
  const told = options.toldInResult === true ? ' told in the result' : ''
  vitestTests(`xstate-plan-mode durable reviews${told}: ${options.name}`, durableReviewScenarios(options))
}
