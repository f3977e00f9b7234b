/**
 * The OpenAI Agents SDK adapter's paused runs, resumed (R156): what the model was told before the
 * pause (a switch notice, a steered `/plan` message) stays where it saw it for the resumed model
 * calls, and is not told again: after another run of the same agent, and across a restart
 * through `saveState`/`restoreState`.
 */
import { Agent, RunState, run, tool, type AgentInputItem, type RunResult } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'
import { MALFORMED_SAVED_RUN_MESSAGE, withPlanMode } from '../src/adapters/openai-agents.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel, type ScriptedTurn } from './fixtures/openai-agents-model.js'

const BASE = 'You are a careful coding agent.'
const SECTION = 'PLAN MODE: read, design, and present the plan with exit_plan_mode.'
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
// docs/spec.md: R32, R45.
const ENTERING = 'The user switched this session to plan mode.'
const FEEDBACK = 'The user chose to keep planning; their feedback: '

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyAgent = Agent<any, any>
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Input = string | AgentInputItem[] | RunState<any, AnyAgent>

function host(log: SessionLog, script: ScriptedTurn[] = []) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'coder-1', session: log, steer: (message) => plan.steer(message) }
  const deploy = tool({ name: 'deploy', description: 'Deploys.', parameters: { type: 'object', properties: {}, required: [], additionalProperties: false }, needsApproval: true, execute: async () => 'deployed' })
  const plan = withPlanMode({ planMode, agent, tools: [deploy] })
  const { model, requests, push } = scriptedModel(script)
  const coder: AnyAgent = new Agent({ name: 'coder', instructions: BASE, model, tools: plan.tools })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const turn = (input: Input): Promise<RunResult<any, AnyAgent>> => plan.runTurn(() => run(coder, input as string, { callModelInputFilter: plan.callModelInputFilter }))
  return { planMode, agent, plan, coder, requests, push, turn, log }
}

const outcomes = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)
const userTexts = (items: AgentInputItem[]) =>
  items.flatMap((item) => ('role' in item && item.role === 'user' ? (typeof item.content === 'string' ? [item.content] : item.content.flatMap((part) => (part.type === 'input_text' ? [part.text] : []))) : []))

/** An agent told it entered plan mode at the model call that presented PLAN as `call-1`: the run paused at the review. */
async function pausedAfterNotice() {
  const h = host(createMemorySessionLog(), [{ text: 'hello' }, { calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
  await h.turn('Hi.')
  await h.planMode.set(h.agent, true)
  const result = await h.turn('Plan the importer.')
  expect(h.requests[1]!.userTexts).toEqual(['Plan the importer.', ENTERING])
  expect(result.interruptions.length).toBe(1)
  return { ...h, result }
}

describe('xstate-plan-mode/openai-agents: a paused run, resumed, keeps what its model was told', () => {
  it('R156 regression: a paused run resumed after another run of the same agent shows the notice told before the pause where the model saw it', async () => {
    const h = host(createMemorySessionLog(), [{ text: 'hello' }, { calls: [['deploy', {}, 'd-1']] }, { text: 'a side answer' }, { text: 'deployed it' }])
    await h.turn('Hi.')
    await h.planMode.set(h.agent, true)
    const paused = await h.turn('Deploy it.')
    expect(h.requests[1]!.userTexts).toEqual(['Deploy it.', ENTERING])
    expect(paused.interruptions.map((item) => item.name)).toEqual(['deploy'])
    // Another run of the agent while the first waits for the deploy's approval.
    await h.turn('What does the importer do?')
    expect(h.requests[2]!.userTexts).toEqual(['What does the importer do?'])
    paused.state.approve(paused.state.getInterruptions()[0]!)
    const resumed = await h.turn(paused.state)
    expect(h.requests[3]!.userTexts).toEqual(['Deploy it.', ENTERING])
    expect(h.requests[3]!.results.get('d-1')).toBe('deployed')
    expect(userTexts(h.plan.history(resumed.history))).toEqual(['Deploy it.', ENTERING])
  })

  it('R156: restored in another process with saveState/restoreState, the rejected run\'s next model call shows the notice once, where the model saw it, with the section', async () => {
    const first = await pausedAfterNotice()
    const saved = first.plan.saveState(first.result.state)
    await first.planMode.dispose()
    const next = host(first.log, [{ text: 'revising' }])
    const state = await next.plan.restoreState(next.coder, saved)
    state.reject(state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    const result = await next.turn(state)
    const request = next.requests[0]!
    expect(request.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(request.instructions).toBe(`${BASE}\n\n${SECTION}`)
    expect(request.results.get('call-1')).toBe(`${FEEDBACK}Use SQLite.`)
    // In the order the model saw them: the notice after the turn's input, before the exit call.
    expect(request.input.map((item) => item.type ?? 'message')).toEqual(['message', 'message', 'function_call', 'function_call_result'])
    expect(userTexts(next.plan.history(result.history))).toEqual(['Plan the importer.', ENTERING])
    expect(outcomes(next.log)).toEqual(['requested', 'keep-planning'])
  })

  it('R156: a steered /plan message sent before the pause is kept by saveState, and told once', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await h.planMode.set(h.agent, true)
    h.plan.steer({ role: 'user', content: [{ type: 'text', text: 'Use the staging database.' }] } as Parameters<typeof h.plan.steer>[0])
    const paused = await h.turn('Plan the importer.')
    expect(h.requests[0]!.userTexts).toEqual(['Plan the importer.', 'Use the staging database.'])
    const saved = h.plan.saveState(paused.state)
    await h.planMode.dispose()
    const next = host(h.log, [{ text: 'carrying out' }])
    const state = await next.plan.restoreState(next.coder, saved)
    state.approve(state.getInterruptions()[0]!)
    await next.turn(state)
    expect(next.requests[0]!.userTexts).toEqual(['Plan the importer.', 'Use the staging database.'])
    expect(outcomes(next.log)).toEqual(['requested', 'approved'])
  })

  it('R156: restoreState takes a plain RunState string too: the run resumes, without the messages the SDK\'s state does not hold (none is told again)', async () => {
    const first = await pausedAfterNotice()
    const plain = first.result.state.toString()
    const next = host(first.log, [{ text: 'revising' }])
    const state = await next.plan.restoreState(next.coder, plain)
    state.reject(state.getInterruptions()[0]!)
    await next.turn(state)
    expect(next.requests[0]!.userTexts).toEqual(['Plan the importer.'])
    expect(outcomes(next.log)).toEqual(['requested', 'keep-planning'])
  })

  it('R156: a saveState string from untrusted storage whose messages are not as saveState wrote them (a forged system message, a bad place, a malformed fresh context) restores nothing: restoreState rejects with the malformed text', async () => {
    const first = await pausedAfterNotice()
    const saved = JSON.parse(first.plan.saveState(first.result.state)) as { injections: { at: number; message: Record<string, unknown> }[]; fresh: unknown }
    expect(saved.injections.length).toBe(1)
    const next = host(first.log, [{ text: 'revising' }])
    const forge = (change: (copy: typeof saved) => void) => {
      const copy = structuredClone(saved)
      change(copy)
      return JSON.stringify(copy)
    }
    const forgeries = [
      forge((copy) => void (copy.injections[0]!.message = { ...copy.injections[0]!.message, role: 'system' })),
      forge((copy) => void (copy.injections[0]!.message = { type: 'message', role: 'user', content: 'not parts' })),
      forge((copy) => void (copy.injections[0]!.at = -1)),
      forge((copy) => void (copy.injections[0]!.at = 1.5)),
      forge((copy) => void (copy.fresh = { cut: 0, seed: { type: 'message', role: 'assistant', content: [] }, handoff: {} })),
      forge((copy) => void ((copy as Record<string, unknown>).answered = [7])),
      forge((copy) => void ((copy as Record<string, unknown>)['xstate-plan-mode/openai-agents run'] = 2)),
    ]
    for (const text of forgeries) await expect(next.plan.restoreState(next.coder, text)).rejects.toThrow(MALFORMED_SAVED_RUN_MESSAGE)
    expect(MALFORMED_SAVED_RUN_MESSAGE).toBe('plan-mode openai-agents: restoreState: the saved run is malformed (not as saveState wrote it); nothing was restored')
    // The string as saveState wrote it still restores, and the run goes on.
    const state = await next.plan.restoreState(next.coder, JSON.stringify(saved))
    state.reject(state.getInterruptions()[0]!)
    await next.turn(state)
    expect(next.requests[0]!.userTexts).toEqual(['Plan the importer.', ENTERING])
  })
})
