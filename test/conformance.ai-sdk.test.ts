/**
 * The conformance kit (`xstate-plan-mode/testing`) run against a host wired through the AI SDK
 * adapter (`withPlanMode`) by the package's stock driver (`xstate-plan-mode/testing/ai-sdk`,
 * src/testing/ai-sdk.ts): a memory log, a review channel the driver answers, and per `step()`
 * one real `generateText` step (`stopWhen: stepCountIs(1)`, `tools: plan.tools`,
 * `prepareStep: plan.prepareStep`) against a scripted mock model. What `step()` returns is read
 * from the request the mock model actually received: the section is the system prompt minus the
 * base prompt (and its `\n\n` separator), the notices are the user messages the adapter injected
 * after the host's history.
 *
 * - Turns go through `plan.startTurn` / `plan.endTurn` (the adapter logs `turn/start`/`turn/end`);
 *   the adapter itself logs the `request/header { step }` of each step (R17, R30).
 * - `step({ signal })`: the step's signal is the adapter's default boundary signal
 *   (`WithPlanModeOptions.abortSignal`, read at each step) and `generateText`'s `abortSignal`.
 *   An aborted step sends no request, so it reports `{ section: '', notices: [] }`.
 * - `callExitTool` calls the AI SDK tool's `execute` (`plan.tools.exit_plan_mode.execute`), not a
 *   model-issued tool call; its thrown error is the message the SDK would send as `tool-error`.
 * - Durable reviews (told in the call's result): `callExitTool` asks the tool's `needsApproval`,
 *   which opens the review and keeps the call waiting as its card; an approval runs the tool's
 *   `execute`, a denial goes to `callReviews.deny`, any other answer to `answerReview(…, {
 *   toldInResult: true })` (as the web chat answers the added decisions); `callResult()` is the
 *   card settled by `settleClosedApprovals` in a later process (R82, R87, R135).
 * - `/plan` goes through `planMode.command.run`, logged `command/run` … `command/done` like the
 *   memory host; `/plan <message>` is steered through `plan.steer` (and recorded for `steered()`);
 *   the next `step()` starts its call with `plan.takeSteered()` as the adapter documents.
 *
 * What does not apply as such to this host:
 * - `restart()`: the AI SDK adapter has no persistence of its own; a "restart" here is what a host
 *   process would do: dispose the service and build a new `createPlanMode` + `withPlanMode` over
 *   the same session log (memory log, so only the log survives; the adapter's in-memory queue of
 *   steered messages and the conversation history do not, which the kit's restart scenarios do not
 *   need). The R64 scenarios therefore test the core's replay through the adapter, not any
 *   durability of the adapter itself.
 * - The kit's `step()` is one model request; in production one `generateText` call runs many steps.
 *   Here each kit step is its own `generateText` call (stepNumber 0), so the adapter's within-call
 *   re-injection of notices at later steps of the same call is not exercised by the kit (it is
 *   covered by test/ai-sdk.test.ts). The model's own `exit_plan_mode` tool calls and tool-error
 *   mapping are likewise not driven by the kit (it calls `execute` directly).
 */
import { describe, expect, it } from 'vitest'
import { conformanceSuites } from '../src/testing/ai-sdk.js'
import { defineConformanceSuite, defineDurableReviewSuite } from '../src/testing/index.js'

const SECTION = 'PLAN MODE: explore and design; present the plan with exit_plan_mode.'
const suites = conformanceSuites({ section: SECTION, system: 'You are a careful coding agent.', name: 'AI SDK generateText (withPlanMode), scripted mock model' })

defineConformanceSuite(suites.channel)
defineDurableReviewSuite(suites.durable)

describe('the AI SDK conformance driver', () => {
  it('reads the section and notices from the request the model received', async () => {
    const host = await suites.channel.createHost()
    const agent = await host.createAgent()
    await agent.command('')
    await agent.startTurn()
    expect(await agent.step()).toEqual({ section: SECTION, notices: [] })
    const types = agent.events().map((e) => e.type)
    expect(types).toEqual(['command/run', 'plan/mode', 'command/done', 'turn/start', 'request/header'])
  })
})
