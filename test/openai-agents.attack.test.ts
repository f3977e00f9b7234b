import { Agent, run, type AgentInputItem, type RunResult, type RunState } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/openai-agents.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel, type ScriptedTurn } from './fixtures/openai-agents-model.js'

const SECTION = 'PLAN MODE: read, design, and present the plan with exit_plan_mode.'
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const APPROVED_RESULT = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'

function host(log: SessionLog, script: ScriptedTurn[] = []) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'coder-1', session: log }
  const plan = withPlanMode({ planMode, agent })
  const { model, requests, push } = scriptedModel(script)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const coder: Agent<any, any> = new Agent({ name: 'coder', instructions: 'Code.', model, tools: plan.tools })
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const turn = (input: string | AgentInputItem[] | RunState<any, Agent<any, any>>): Promise<RunResult<any, Agent<any, any>>> =>
    plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
  return { planMode, agent, plan, requests, push, turn, log }
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
