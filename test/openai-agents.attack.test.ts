import { Agent, RunState, run, tool, type AgentInputItem, type RunResult } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/openai-agents.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel, type ScriptedTurn } from './fixtures/openai-agents-model.js'

const SECTION = 'PLAN MODE: read, design, and present the plan with exit_plan_mode.'
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const APPROVED_RESULT = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'

const PLAN_2 = '# Ship the importer\n\n1. Drop the table.\n2. Store the rows.'
const NO_PARAMETERS = { type: 'object' as const, properties: {}, required: [], additionalProperties: false as const }

function host(log: SessionLog, script: ScriptedTurn[] = []) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'coder-1', session: log }
  // `/plan` typed while the run works (the tool stands for the user), and a host tool that needs the SDK's approval.
  const replan = tool({ name: 'replan', description: 'The user typed /plan.', parameters: NO_PARAMETERS, execute: async () => (await planMode.command.run({ agent, rawInput: '' })).kind })
  const deploy = tool({ name: 'deploy', description: 'Deploys.', parameters: NO_PARAMETERS, needsApproval: true, execute: async () => 'deployed' })
  const plan = withPlanMode({ planMode, agent, tools: [replan, deploy] })
  const { model, requests, push } = scriptedModel(script)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const coder: Agent<any, any> = new Agent({ name: 'coder', instructions: 'Code.', model, tools: plan.tools })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const turn = (input: string | AgentInputItem[] | RunState<any, Agent<any, any>>): Promise<RunResult<any, Agent<any, any>>> =>
    plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
  return { planMode, agent, plan, coder, requests, push, turn, log }
}
const outcomes = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)

describe('xstate-plan-mode/openai-agents: reviews reopened under a reused call id', () => {
  it('R155 regression: a review reopened for a call id and plan an earlier review kept planning on is approved when its interruption is approved', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'revising' }])
    await h.planMode.set(h.agent, true)
    const first = await h.turn('Import the CSV files.')
    first.state.reject(first.state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    const history = h.plan.history((await h.turn(first.state)).history)
    // The model presents the same plan under the same call id again (some providers reuse ids).
    h.push({ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'carrying out' })
    const second = await h.turn([...history, { role: 'user', content: 'Present it again.' }])
    expect(second.interruptions.length).toBe(1)
    second.state.approve(second.state.getInterruptions()[0]!)
    await h.turn(second.state)
    expect(outcomes(h.log)).toEqual(['requested', 'keep-planning', 'requested', 'approved'])
    expect(h.planMode.openReview(h.agent)).toBeNull()
    // The model reads the approval of the call it made, not the earlier review's keep planning.
    expect(h.requests.at(-1)!.results.get('call-1')).toBe(APPROVED_RESULT)
  })
})

const replayed = (callId: string) => `exit_plan_mode call "${callId}" repeats the id of a call this run already answered: its plan was not reviewed, and nothing was approved.`

describe('xstate-plan-mode/openai-agents: an approval is consent to one call\'s plan, once (R168)', () => {
  /** A run whose exit call `call-1` (PLAN) was approved, resumed: the SDK now holds `call-1` approved for the rest of the run. */
  async function approvedInRun(after: ScriptedTurn[]) {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, ...after])
    await h.planMode.set(h.agent, true)
    const first = await h.turn('Import the CSV files.')
    first.state.approve(first.state.getInterruptions()[0]!)
    return { ...h, result: await h.turn(first.state) }
  }

  it('R168 regression: a call replaying the id of a call approved earlier in the run, after /plan, is refused: the old approval is not told again', async () => {
    const h = await approvedInRun([{ calls: [['replan', {}, 'r-1']] }, { calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'waiting' }])
    expect(h.result.interruptions).toEqual([])
    expect(h.requests.at(-1)!.results.get('call-1')).toBe(replayed('call-1'))
    expect(outcomes(h.log)).toEqual(['requested', 'approved'])
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(h.planMode.openReview(h.agent)).toBeNull()
  })

  it('R168 regression: an approval kept in a RunState string does not approve a review another run opened later under the same call id, in another process', async () => {
    const h = await approvedInRun([{ calls: [['deploy', {}, 'd-1']] }])
    // The run waits for the deploy's approval; the state holds call-1 approved.
    expect(h.result.interruptions.map((item) => item.name)).toEqual(['deploy'])
    const saved = h.result.state.toString()
    // Meanwhile: /plan, and another run presents another plan under the same id (a provider that reuses ids).
    await h.planMode.set(h.agent, true)
    h.push({ calls: [['exit_plan_mode', { plan: PLAN_2 }, 'call-1']] })
    expect((await h.turn('Now the table.')).interruptions.length).toBe(1)
    const open = h.planMode.openReview(h.agent)
    expect(open).toMatchObject({ callId: 'call-1', plan: PLAN_2 })
    await h.planMode.dispose()
    // Another process resumes the first run; its model replays call-1 with the plan under review.
    const next = host(h.log, [{ calls: [['exit_plan_mode', { plan: PLAN_2 }, 'call-1']] }, { text: 'waiting' }])
    const state = await RunState.fromString(next.coder, saved)
    state.approve(state.getInterruptions()[0]!)
    await next.turn(state)
    expect(next.requests.at(-1)!.results.get('call-1')).toBe(replayed('call-1'))
    expect(next.planMode.openReview(next.agent)?.reviewId).toBe(open!.reviewId)
    expect(outcomes(next.log)).toEqual(['requested', 'approved', 'requested'])
    expect(next.planMode.get(next.agent)).toEqual({ active: true })
  })

  it('R155, R168: a RunState string whose paused exit call was edited to carry another plan approves nothing: the open review closes as keep planning', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await h.planMode.set(h.agent, true)
    const saved = (await h.turn('Import the CSV files.')).state.toString()
    const forged = saved.split(JSON.stringify(JSON.stringify({ plan: PLAN })).slice(1, -1)).join(JSON.stringify(JSON.stringify({ plan: PLAN_2 })).slice(1, -1))
    expect(forged).not.toBe(saved)
    h.push({ text: 'revising' })
    const state = await RunState.fromString(h.coder, forged)
    state.approve(state.getInterruptions()[0]!)
    await h.turn(state)
    expect(h.requests.at(-1)!.results.get('call-1')).toBe(
      'the approval of tool call "call-1" is for another plan than the one under review; nothing was approved, and that review is closed: present the plan again',
    )
    expect(outcomes(h.log)).toEqual(['requested', 'keep-planning'])
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })

  it('R168: alwaysApprove approves the plan of its call only: a later exit call of the run is never reviewed, and approves nothing', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await h.planMode.set(h.agent, true)
    const first = await h.turn('Import the CSV files.')
    first.state.approve(first.state.getInterruptions()[0]!, { alwaysApprove: true })
    h.push({ calls: [['replan', {}, 'r-1']] }, { calls: [['exit_plan_mode', { plan: PLAN_2 }, 'call-2']] }, { text: 'waiting' })
    const result = await h.turn(first.state)
    expect(result.interruptions).toEqual([])
    expect(h.requests.at(-1)!.results.get('call-2')).toBe('the approval of tool call "call-2" matches no open plan review; nothing was approved')
    expect(outcomes(h.log)).toEqual(['requested', 'approved'])
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
  })
})

describe('xstate-plan-mode/openai-agents: a rejection is a decision on one review', () => {
  it('R155 regression: a rejection given earlier in a run answers nothing of a review another run opened later for the same call id and plan', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await h.planMode.set(h.agent, true)
    const first = await h.turn('Import the CSV files.')
    first.state.reject(first.state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    // The run goes on planning and waits for a deploy's approval; its state holds call-1 rejected.
    h.push({ calls: [['deploy', {}, 'd-1']] })
    const paused = await h.turn(first.state)
    expect(paused.interruptions.map((item) => item.name)).toEqual(['deploy'])
    // Another run presents the same plan under the same id (a provider that reuses ids): a new review.
    h.push({ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] })
    expect((await h.turn('Present it again.')).interruptions.length).toBe(1)
    const open = h.planMode.openReview(h.agent)
    expect(open).toMatchObject({ callId: 'call-1', plan: PLAN })
    // The first run resumes: its model call answers nothing of that review.
    paused.state.approve(paused.state.getInterruptions()[0]!)
    h.push({ text: 'deployed' })
    await h.turn(paused.state)
    expect(h.planMode.openReview(h.agent)?.reviewId).toBe(open!.reviewId)
    expect(outcomes(h.log)).toEqual(['requested', 'keep-planning', 'requested'])
  })

  it('R155, R156: so does that run restored from saveState\'s string in another process', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await h.planMode.set(h.agent, true)
    const first = await h.turn('Import the CSV files.')
    first.state.reject(first.state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    h.push({ calls: [['deploy', {}, 'd-1']] })
    const saved = h.plan.saveState((await h.turn(first.state)).state)
    h.push({ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] })
    expect((await h.turn('Present it again.')).interruptions.length).toBe(1)
    const open = h.planMode.openReview(h.agent)
    await h.planMode.dispose()
    const next = host(h.log, [{ text: 'deployed' }])
    const state = await next.plan.restoreState(next.coder, saved)
    state.approve(state.getInterruptions()[0]!)
    await next.turn(state)
    expect(next.planMode.openReview(next.agent)?.reviewId).toBe(open!.reviewId)
    expect(outcomes(next.log)).toEqual(['requested', 'keep-planning', 'requested'])
  })
})
