/**
 * The OpenAI Agents SDK adapter on streamed runs (`run(agent, input, { stream: true })`, R169):
 * the same filter, tools and reviews as `run` without streaming, against a scripted model that
 * streams its answers.
 */
import { Agent, RunState, run, tool, type AgentInputItem, type StreamedRunResult } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/openai-agents.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type SessionLog } from '../src/index.js'
import { scriptedModel, type ScriptedTurn } from './fixtures/openai-agents-model.js'

const BASE = 'You are a careful coding agent.'
const SECTION = 'PLAN MODE: read, design, and present the plan with exit_plan_mode.'
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
// docs/spec.md: R32, R45, R50.
const ENTERING = 'The user switched this session to plan mode.'
const APPROVED_RESULT = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'
const FEEDBACK = 'The user chose to keep planning; their feedback: '

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyAgent = Agent<any, any>
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Input = string | AgentInputItem[] | RunState<any, AnyAgent>

function host(log: SessionLog, script: ScriptedTurn[] = []) {
  const planMode = createPlanMode({ section: SECTION, review: 'durable', decisions: 'all', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'coder-1', session: log }
  const readFile = tool({ name: 'read_file', description: 'Reads a file.', parameters: { type: 'object', properties: {}, required: [], additionalProperties: false }, execute: async () => 'rows,cols' })
  const plan = withPlanMode({ planMode, agent, tools: [readFile] })
  const { model, requests, push } = scriptedModel(script)
  const coder: AnyAgent = new Agent({ name: 'coder', instructions: BASE, model, tools: plan.tools })
  const streamed = (input: Input) => run(coder, input as string, { stream: true, callModelInputFilter: plan.callModelInputFilter })
  /** A streamed turn whose events are read as they come, inside the turn; resolves the result and the streamed text. */
  const turn = (input: Input) =>
    plan.runTurn(async () => {
      const result = await streamed(input)
      let text = ''
      for await (const event of result) if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') text += event.data.delta
      return { result, text }
    })
  return { planMode, agent, plan, coder, requests, push, streamed, turn, log }
}

const types = (log: SessionLog) => log.events.map((event) => event.type)
const outcomes = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/review').map((e) => (e.data as { outcome: string }).outcome)

describe('xstate-plan-mode/openai-agents: streamed runs', () => {
  it('R169 regression: runTurn around run(…, { stream: true }) ends the turn when the run is over, not when run() hands the stream back', async () => {
    const h = host(createMemorySessionLog(), [{ text: 'reading' }])
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const result: StreamedRunResult<any, AnyAgent> = await h.plan.runTurn(() => h.streamed('Hello.'))
    expect(types(h.log)).toEqual(['turn/start', 'request/header', 'turn/end'])
    // The SDK kept the events for a later reader.
    let text = ''
    for await (const event of result) if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') text += event.data.delta
    expect(text).toBe('reading')
    expect(result.finalOutput).toBe('reading')
  })

  it('R169: a streamed run\'s model calls carry the section after the instructions and a switch notice once, kept for the run; its text streams', async () => {
    const h = host(createMemorySessionLog(), [{ text: 'hello' }, { calls: [['read_file', {}, 'r-1']] }, { text: 'exploring' }])
    await h.turn('Hi.')
    await h.planMode.set(h.agent, true)
    const { result, text } = await h.turn('Plan the importer.')
    expect(text).toBe('exploring')
    expect(result.finalOutput).toBe('exploring')
    expect(h.requests.slice(1).map((r) => r.instructions)).toEqual([`${BASE}\n\n${SECTION}`, `${BASE}\n\n${SECTION}`])
    expect(h.requests[1]!.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(h.requests[2]!.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(h.requests[2]!.results.get('r-1')).toBe('rows,cols')
    expect(types(h.log)).toEqual(['turn/start', 'request/header', 'turn/end', 'plan/mode', 'turn/start', 'request/header', 'request/header', 'turn/end'])
  })

  it('R169, R155: a streamed run stops at the review\'s interruption; resumed streamed from its string in another process, the approval approves the review', async () => {
    const first = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
    await first.planMode.set(first.agent, true)
    const { result } = await first.turn('Import the CSV files.')
    expect(result.interruptions.map((item) => item.name)).toEqual(['exit_plan_mode'])
    expect(first.planMode.openReview(first.agent)).toMatchObject({ callId: 'call-1', plan: PLAN })
    const saved = result.state.toString()
    await first.planMode.dispose()
    const next = host(first.log, [{ text: 'carrying out' }])
    const state = await RunState.fromString(next.coder, saved)
    state.approve(state.getInterruptions()[0]!)
    const resumed = await next.turn(state)
    expect(resumed.text).toBe('carrying out')
    expect(next.requests[0]!.results.get('call-1')).toBe(APPROVED_RESULT)
    expect(next.requests[0]!.instructions).toBe(BASE)
    expect(outcomes(next.log)).toEqual(['requested', 'approved'])
    expect(next.planMode.get(next.agent)).toEqual({ active: false })
  })

  it('R169, R155: a streamed run resumed with a rejection keeps planning with its message as feedback', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'revising' }])
    await h.planMode.set(h.agent, true)
    const { result } = await h.turn('Import the CSV files.')
    result.state.reject(result.state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    await h.turn(result.state)
    expect(h.requests[1]!.results.get('call-1')).toBe(`${FEEDBACK}Use SQLite.`)
    expect(h.requests[1]!.instructions).toBe(`${BASE}\n\n${SECTION}`)
    expect(outcomes(h.log)).toEqual(['requested', 'keep-planning'])
  })
})
