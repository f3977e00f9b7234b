/**
 * The OpenAI Agents SDK adapter (`@openai/agents-core` 0.14, what `@openai/agents` runs on): plan
 * mode for `run(agent, input)` and `Runner.run`. It translates only: every plan decision is the
 * service's (`planMode.step`: the state in force, the section, the notices, the handoff;
 * `exitTool.execute`; `planMode.callReviews`: which review an approval or a rejection answers, and
 * what a closed review's call results in); this module finds the SDK's calls, approvals and
 * rejections and moves the service's answers into the SDK's run.
 *
 * Where the service's results go:
 * - the step's section: after the agent's instructions (`instructions + '\n\n' + section`), by
 *   `callModelInputFilter`, which runs right before every model call of the run (one step each);
 * - the notices and steered `/plan` messages: user messages after the step's input, kept at that
 *   place for the rest of the turn (the SDK forgets what a filter adds); `history` hands them to
 *   the host's history afterwards;
 * - the exit tool's results: the core's texts, as the tool's output (`exitTool.resultText` on
 *   approval; a failure's message otherwise).
 *
 * Reviews: with a review channel the exit call waits in the tool for the channel's answer. With
 * durable reviews (`review: 'durable'`) the exit tool needs approval: the SDK's interruption is
 * the review, `RunState.approve(item)` approves it, `RunState.reject(item, { message })` keeps
 * planning with the message as feedback, and the state survives `toString()`/`fromString()` and a
 * restart, since the review lives in the log.
 *
 * @example
 * const plan = withPlanMode({ planMode, agent, tools: [readFile, writeFile] })
 * const coder = new Agent({ name: 'coder', instructions: BASE, model, tools: plan.tools })
 * const result = await plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
 *
 * The entry also ships the conformance kit's stock drivers for this adapter
 * (`conformanceDriver`, `durableConformanceDriver`).
 *
 * @module xstate-plan-mode/openai-agents
 */

export { withPlanMode, type PlanModeOpenAiAgents, type RunTurnOptions, type WithPlanModeOptions } from './openai-agents-adapter.js'
export {
  conformanceDriver,
  durableConformanceDriver,
  type ConformanceDriverOptions,
  type DurableConformanceDriverOptions,
} from './openai-agents-conformance.js'
