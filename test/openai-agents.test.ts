/**
 * The OpenAI Agents SDK adapter (`xstate-plan-mode/openai-agents`) driven through real `run()`
 * calls of `@openai/agents-core` against a scripted model: what the model received (instructions,
 * input, tool results) and what the log holds.
 */
import { Agent, RunState, run, tool, type AgentInputItem, type RunResult } from '@openai/agents-core'
import { describe, expect, it } from 'vitest'
import { withPlanMode } from '../src/adapters/openai-agents.js'
import { createPlanGuard, readOnlyTool } from '../src/guard/index.js'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type ReviewChannel, type SessionLog } from '../src/index.js'
import { scriptedModel, type ScriptedTurn } from './fixtures/openai-agents-model.js'

const BASE = 'You are a careful coding agent.'
const SECTION = 'PLAN MODE: read, design, and present the plan with exit_plan_mode.'
const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const PLAN_2 = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows in batches.'
// docs/spec.md: R32, R45, R50, R48, R101, R89.
const ENTERING = 'The user switched this session to plan mode.'
const APPROVED_RESULT = 'Plan approved — plan mode exited; carry out the plan starting with your next step.'
const KEEP_PLANNING = 'The user chose to keep planning; revise the plan and present it again.'
const FEEDBACK = 'The user chose to keep planning; their feedback: '
const SUPERSEDED = 'The user changed the plan mode directly; the review is closed.'
const LEFT = 'The user left plan mode without carrying out the plan; stop here and wait for their message.'
const ALREADY_OPEN = 'a plan review is already open for this agent; wait for its answer'

const writeFile = tool({
  name: 'write_file',
  description: 'Writes a file.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
  execute: async (input) => `wrote ${(input as { path: string }).path}`,
})

/** One agent's host over `log`: a durable service (or a channel's), the adapter, an SDK agent on a scripted model. */
function host(log: SessionLog, script: ScriptedTurn[] = [], options: { review?: ReviewChannel; guard?: 'block' } = {}) {
  const planMode = createPlanMode({ section: SECTION, review: options.review ?? 'durable', decisions: 'all', logger: { warn: () => {} } })
  const agent: PlanAgent = { id: 'coder-1', session: log, steer: (message) => plan.steer(message) }
  const guard = options.guard === undefined ? undefined : createPlanGuard({ planMode, action: options.guard, logger: { warn: () => {} } })
  const plan = withPlanMode({ planMode, agent, tools: [writeFile], ...(guard ? { guard } : {}) })
  const { model, requests, push } = scriptedModel(script)
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const coder: Agent<any, any> = new Agent({ name: 'coder', instructions: BASE, model, tools: plan.tools })
  const turn = (input: string | AgentInputItem[] | RunState<any, Agent<any, any>>): Promise<RunResult<any, Agent<any, any>>> =>
    plan.runTurn(() => run(coder, input, { callModelInputFilter: plan.callModelInputFilter }))
  return { planMode, agent, plan, coder, requests, push, turn, log }
}

const types = (log: SessionLog) => log.events.map((event) => event.type)
const reviewRecords = (log: SessionLog) =>
  log.events.filter((event) => event.type === 'plan/review').map((event) => {
    const { outcome, feedback, toldInResult, callId } = event.data as Record<string, unknown>
    return { outcome, ...(feedback === undefined ? {} : { feedback }), ...(toldInResult === undefined ? {} : { toldInResult }), ...(callId === undefined ? {} : { callId }) }
  })

/** A host in plan mode whose first turn presented PLAN as call `call-1`: the run stopped at the interruption. */
async function presented(log = createMemorySessionLog()) {
  const h = host(log, [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }])
  await h.planMode.set(h.agent, true)
  const result = await h.turn('Import the CSV files.')
  return { ...h, result }
}

describe('xstate-plan-mode/openai-agents', () => {
  it('R156: every model call carries the section after the instructions, a switch notice once, and a request/header after the boundary', async () => {
    const h = host(createMemorySessionLog(), [{ text: 'exploring' }, { calls: [['write_file', { path: 'a.ts' }, 'w-1']] }, { text: 'written' }])
    await h.turn('Hello.')
    expect(h.requests[0]!.instructions).toBe(BASE)
    await h.planMode.set(h.agent, true)
    const second = await h.turn([{ role: 'user', content: 'Plan the importer.' }])
    expect(second.finalOutput).toBe('written')
    expect(h.requests.slice(1).map((r) => r.instructions)).toEqual([`${BASE}\n\n${SECTION}`, `${BASE}\n\n${SECTION}`])
    // The notice is told once, and stays where the model saw it for the rest of the turn.
    expect(h.requests[1]!.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(h.requests[2]!.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(h.plan.history(second.history).flatMap((item) => ('role' in item && item.role === 'user' ? [item] : [])).length).toBe(2)
    expect(types(h.log)).toEqual([
      'turn/start', 'request/header', 'turn/end',
      'plan/mode', 'turn/start', 'request/header', 'request/header', 'turn/end',
    ])
  })

  it('R156 regression: a second run of one turn, started from history(), shows the notice once (injections are kept per run, not per turn)', async () => {
    const h = host(createMemorySessionLog(), [{ text: 'hello' }, { text: 'first' }, { text: 'second' }])
    await h.turn('Hi.')
    await h.planMode.set(h.agent, true)
    await h.plan.startTurn()
    const first = await run(h.coder, 'Plan the importer.', { callModelInputFilter: h.plan.callModelInputFilter })
    await run(h.coder, h.plan.history(first.history), { callModelInputFilter: h.plan.callModelInputFilter })
    await h.plan.endTurn()
    expect(h.requests[1]!.userTexts).toEqual(['Plan the importer.', ENTERING])
    expect(h.requests[2]!.userTexts).toEqual(['Plan the importer.', ENTERING])
  })

  it('R155: a durable exit call stops the run at an interruption: the review is open, bound to the call, and nothing else ran', async () => {
    const { result, planMode, agent, log } = await presented()
    expect(result.interruptions.map((item) => item.rawItem.type === 'function_call' && item.rawItem.callId)).toEqual(['call-1'])
    expect(planMode.openReview(agent)).toMatchObject({ plan: PLAN, callId: 'call-1' })
    expect(reviewRecords(log)).toEqual([{ outcome: 'requested', callId: 'call-1' }])
  })

  it('R155: approving the interruption of a state restored from its string approves the review, told in the result; the next step leaves plan mode silently', async () => {
    const first = await presented()
    const saved = first.result.state.toString()
    await first.planMode.dispose()
    // A new process: a new service and adapter over the same log, the state from its string.
    const h = host(first.log, [{ text: 'carrying out' }])
    const state = await RunState.fromString(h.coder, saved)
    state.approve(state.getInterruptions()[0]!)
    const result = await h.turn(state)
    expect(result.finalOutput).toBe('carrying out')
    const request = h.requests[0]!
    expect(request.results.get('call-1')).toBe(APPROVED_RESULT)
    expect(request.instructions).toBe(BASE)
    expect(request.userTexts).toEqual(['Import the CSV files.'])
    expect(reviewRecords(h.log)).toEqual([{ outcome: 'requested', callId: 'call-1' }, { outcome: 'approved', toldInResult: true }])
    expect(h.planMode.get(h.agent)).toEqual({ active: false })
  })

  it('R155: rejecting with a message keeps planning with it as feedback; every later model call reads the keep-planning text, not the SDK\'s', async () => {
    const first = await presented()
    first.push({ calls: [['write_file', { path: 'notes.md' }, 'w-1']] }, { text: 'revising' })
    const state = first.result.state
    state.reject(state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    await first.turn(state)
    const [afterReject, later] = first.requests.slice(1)
    expect(afterReject!.results.get('call-1')).toBe(`${FEEDBACK}Use SQLite.`)
    expect(later!.results.get('call-1')).toBe(`${FEEDBACK}Use SQLite.`)
    expect(afterReject!.instructions).toBe(`${BASE}\n\n${SECTION}`)
    expect(afterReject!.userTexts).toEqual(['Import the CSV files.'])
    expect(reviewRecords(first.log)).toEqual([
      { outcome: 'requested', callId: 'call-1' },
      { outcome: 'keep-planning', feedback: 'Use SQLite.', toldInResult: true },
    ])
    expect(first.planMode.openReview(first.agent)).toBeNull()
  })

  it('R155: rejecting without a message keeps planning without feedback', async () => {
    const first = await presented()
    const state = first.result.state
    state.reject(state.getInterruptions()[0]!)
    await first.turn(state)
    expect(first.requests[1]!.results.get('call-1')).toBe(KEEP_PLANNING)
    expect(reviewRecords(first.log).at(-1)).toEqual({ outcome: 'keep-planning', toldInResult: true })
  })

  it('R155 regression: a new run whose history holds an earlier rejected call of the same id and plan answers nothing of the review open for that id', async () => {
    const first = await presented()
    first.push({ text: 'revising' })
    const state = first.result.state
    state.reject(state.getInterruptions()[0]!, { message: 'Use SQLite.' })
    const history = first.plan.history((await first.turn(state)).history)
    // The model presents the same plan under the same call id again (some providers reuse ids): a new review.
    first.push({ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'a question meanwhile' })
    expect((await first.turn([...history, { role: 'user', content: 'Present it again.' }])).interruptions.length).toBe(1)
    const reopened = first.planMode.openReview(first.agent)
    expect(reopened).toMatchObject({ callId: 'call-1', plan: PLAN })
    // The host starts another run from its history while that review waits.
    await first.turn([...history, { role: 'user', content: 'What does step 2 do?' }])
    expect(first.planMode.openReview(first.agent)?.reviewId).toBe(reopened!.reviewId)
    expect(reviewRecords(first.log).map((r) => r.outcome)).toEqual(['requested', 'keep-planning', 'requested'])
  })

  it('R155: resuming without a decision asks again for the same call: it stays pending and opens nothing', async () => {
    const first = await presented()
    const again = await first.turn(first.result.state)
    expect(again.interruptions.length).toBe(1)
    expect(first.requests.length).toBe(1)
    expect(reviewRecords(first.log)).toEqual([{ outcome: 'requested', callId: 'call-1' }])
  })

  it('R155: a second exit call while the review is open is refused with the core\'s text as its output', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1'], ['exit_plan_mode', { plan: PLAN_2 }, 'call-2']] }])
    await h.planMode.set(h.agent, true)
    const result = await h.turn('Import.')
    expect(result.interruptions.length).toBe(1)
    const state = result.state
    state.reject(state.getInterruptions()[0]!)
    h.push({ text: 'ok' })
    await h.turn(state)
    expect(h.requests[1]!.results.get('call-2')).toBe(ALREADY_OPEN)
  })

  it('R157: an interruption whose review /plan off closed meanwhile is settled with the supersede text before the run resumes', async () => {
    const first = await presented()
    expect((await first.planMode.command.run({ agent: first.agent, rawInput: 'off' })).kind).toBe('success')
    const state = first.result.state
    expect(first.plan.settleInterruptions(state)).toBe(1)
    first.push({ text: 'stopping' })
    await first.turn(state)
    expect(first.requests[1]!.results.get('call-1')).toBe(SUPERSEDED)
    expect(reviewRecords(first.log).map((r) => r.outcome)).toEqual(['requested', 'superseded'])
  })

  it('R157: answer() takes the added decisions through the interruption: Leave plan mode is told in the call\'s result, once', async () => {
    const first = await presented()
    const state = first.result.state
    expect(await first.plan.answer(state, state.getInterruptions()[0]!, { answers: [{ id: 'plan-review', selected: ['Leave plan mode'] }] })).toBe('left')
    first.push({ text: 'waiting' })
    await first.turn(state)
    expect(first.requests[1]!.results.get('call-1')).toBe(LEFT)
    expect(first.requests[1]!.userTexts).toEqual(['Import the CSV files.'])
    expect(reviewRecords(first.log).at(-1)).toEqual({ outcome: 'left', toldInResult: true })
    expect(first.planMode.get(first.agent)).toEqual({ active: false })
  })

  it('R157, R102: Approve in a fresh context hands the plan off: the next model call starts from the handoff text alone', async () => {
    const first = await presented()
    const state = first.result.state
    expect(await first.plan.answer(state, state.getInterruptions()[0]!, { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] })).toBe('approved')
    first.push({ calls: [['write_file', { path: 'importer.ts' }, 'w-1']] }, { text: 'done' })
    const result = await first.turn(state)
    const [fresh, next] = first.requests.slice(1)
    expect(fresh!.input.length).toBe(1)
    expect(fresh!.userTexts[0]).toMatch(/^The user approved this plan \(v1\) to be carried out in a fresh context/)
    expect(fresh!.userTexts[0]).toContain(PLAN)
    expect(next!.input.length).toBe(3)
    expect(first.plan.handoff).toMatchObject({ plan: PLAN, version: 1 })
    expect(first.plan.history(result.history).length).toBe(4)
  })

  it('R156: with a review channel the exit call waits for the answer in the tool; approval and keep planning reach the model as the core\'s texts', async () => {
    const answers = [{ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Batch the inserts.' }] }, { answers: [{ id: 'plan-review', selected: ['Approve'] }] }]
    const review: ReviewChannel = { ask: async () => answers.shift()! }
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { calls: [['exit_plan_mode', { plan: PLAN_2 }, 'call-2']] }, { text: 'carrying out' }], { review })
    await h.planMode.set(h.agent, true)
    await h.turn('Import.')
    expect(h.requests[1]!.results.get('call-1')).toBe(`${FEEDBACK}Batch the inserts.`)
    expect(h.requests[2]!.results.get('call-2')).toBe(APPROVED_RESULT)
    expect(h.requests[2]!.instructions).toBe(BASE)
    expect(reviewRecords(h.log).map((r) => r.outcome)).toEqual(['keep-planning', 'approved'])
  })

  it('R156: an exit call outside plan mode reads R42\'s text as its output', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['exit_plan_mode', { plan: PLAN }, 'call-1']] }, { text: 'ok' }])
    await h.turn('Import.')
    expect(h.requests[1]!.results.get('call-1')).toBe('exit_plan_mode is only available in plan mode')
  })

  it('R158: with a blocking guard a side-effecting host tool does not run in plan mode: its output is the guard\'s message, and the violation is logged', async () => {
    const h = host(createMemorySessionLog(), [{ calls: [['write_file', { path: 'a.ts' }, 'w-1']] }, { text: 'ok' }, { calls: [['write_file', { path: 'b.ts' }, 'w-2']] }, { text: 'ok' }], { guard: 'block' })
    await h.planMode.set(h.agent, true)
    await h.turn('Import.')
    expect(h.requests[1]!.results.get('w-1')).toBe('write_file is not available in plan mode; present your plan with exit_plan_mode first.')
    expect(types(h.log)).toContain('plan/violation')
    await h.planMode.set(h.agent, false)
    await h.turn('Now write.')
    expect(h.requests[3]!.results.get('w-2')).toBe('wrote b.ts')
  })

  it('R158: a read-only host tool (readOnlyTool) runs under a blocking guard in plan mode, and nothing is recorded', async () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    const log = createMemorySessionLog()
    const agent: PlanAgent = { id: 'reader', session: log }
    const readFile = readOnlyTool(tool({ name: 'read_file', description: 'Reads.', parameters: { type: 'object', properties: {}, required: [], additionalProperties: false }, execute: async () => 'contents' }))
    const plan = withPlanMode({ planMode, agent, tools: [readFile], guard: createPlanGuard({ planMode, action: 'block', logger: { warn: () => {} } }) })
    const { model, requests } = scriptedModel([{ calls: [['read_file', {}, 'r-1']] }, { text: 'read' }])
    const reader = new Agent({ name: 'reader', instructions: BASE, model, tools: plan.tools })
    await planMode.set(agent, true)
    await plan.runTurn(() => run(reader, 'Read.', { callModelInputFilter: plan.callModelInputFilter }))
    expect(requests[1]!.results.get('r-1')).toBe('contents')
    expect(types(log)).not.toContain('plan/violation')
  })

  it('R156: a steered message part the SDK cannot take is refused with a TypeError naming its type', () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable' })
    const plan = withPlanMode({ planMode, agent: { id: 'a', session: createMemorySessionLog() } })
    expect(() => plan.steer({ role: 'user', content: [{ type: 'image', image: 'x' }] } as never)).toThrow(
      'plan-mode: a message part of type "image" cannot be sent to the OpenAI Agents SDK; attach input_image or input_file parts',
    )
  })

  it('R156: a host tool named exit_plan_mode is refused', () => {
    const planMode = createPlanMode({ section: SECTION, review: 'durable' })
    const agent: PlanAgent = { id: 'a', session: createMemorySessionLog() }
    const clash = tool({ name: 'exit_plan_mode', description: 'x', parameters: { type: 'object', properties: {}, required: [], additionalProperties: false }, execute: async () => 'x' })
    expect(() => withPlanMode({ planMode, agent, tools: [clash] })).toThrow('withPlanMode: a host tool is already named "exit_plan_mode"')
  })
})

it('R156: the adapter translates: besides types, it takes from src/ only the log\'s event names, the call transcript, the turn around a call, the guard, the plan argument\'s reader and its SDK loader (R170)', async () => {
  const { readFile } = await import('node:fs/promises')
  const text = await readFile(new URL('../src/adapters/openai-agents.ts', import.meta.url), 'utf8')
  const values = [...text.matchAll(/^import\s+(?!type\b)[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]/gms)].map((match) => match[1]).sort()
  expect(values).toEqual(['../guard/index.js', '../log/kinds.js', '../plan/exit-tool.js', '../plan/transcript.js', '../plan/turn.js', './openai-agents-sdk.js'])
})
