/**
 * The suites every runner's wrapper makes (vitest's in `index.ts`, `node:test`'s in `node.ts`):
 * one test per scenario, in a `describe` named for the host. Internal: each wrapper passes its
 * runner's `describe` and `it`.
 */
import {
  conformanceScenarios,
  durableReviewScenarios,
  type ConformanceScenario,
  type ConformanceSuiteOptions,
  type DurableReviewSuiteOptions,
} from './scenarios.js'

/** A test runner's `describe` and `it`, as vitest and `node:test` both give them. */
export interface ScenarioRunner {
  describe(name: string, body: () => void): unknown
  it(name: string, test: (context: { skip(note?: string): void }) => Promise<void>): unknown
}

/** One test per scenario; a scenario that does not apply to the driver is skipped with its reason. */
function scenarioTests({ describe, it }: ScenarioRunner, suite: string, scenarios: readonly ConformanceScenario[]): void {
  void describe(suite, () => {
    for (const { title, run } of scenarios) {
      void it(title, async (context) => {
        const result = await run()
        if ('skipped' in result) context.skip(result.skipped)
      })
    }
  })
}

/** SPEC's observable scenarios (`conformanceScenarios`) as the runner's tests. */
export function conformanceSuite(runner: ScenarioRunner, options: ConformanceSuiteOptions): void {
  scenarioTests(runner, `xstate-plan-mode conformance: ${options.name}`, conformanceScenarios(options))
}

/** The durable-review scenarios (`durableReviewScenarios`) as the runner's tests. */
export function durableReviewSuite(runner: ScenarioRunner, options: DurableReviewSuiteOptions): void {
  const told = options.toldInResult === true ? ' told in the result' : ''
  scenarioTests(runner, `xstate-plan-mode durable reviews${told}: ${options.name}`, durableReviewScenarios(options))
}
