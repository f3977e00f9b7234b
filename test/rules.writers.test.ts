import { describe, expect, it } from 'vitest'
import { createPlanMode, planProjection, type PlanAgent, type PlanMode, type SessionLog } from '../src/index.js'
import { COMMAND_DONE_EVENT, COMMAND_RUN_EVENT } from '../src/log/kinds.js'
import { createMemorySessionLog } from '../src/adapters/memory.js'
import { createScriptedReview, flush, LEAVING, PLAN, SECTION } from './helpers.js'

/**
 * R86: two writers of one session (two instances, two processes on a shared log), each with its
 * own service, and a host that logs its `/plan` commands around their runs (R58).
 */
function writers() {
  const log = createMemorySessionLog()
  const warnings: unknown[][] = []
  const make = (options: Omit<Parameters<typeof createPlanMode>[0], 'section'> = {}) =>
    createPlanMode({ section: SECTION, logger: { warn: (...args: unknown[]) => warnings.push(args) }, ...options })
  const a = make()
  const b = make()
  const agentA: PlanAgent = { id: 'agent-1', session: log }
  const agentB: PlanAgent = { id: 'agent-1', session: log }
  let commands = 0
  /** `/plan <rawInput>` typed on one writer, logged as a host logs it, with ids unique across writers. */
  const plan = async (planMode: PlanMode, agent: PlanAgent, rawInput: string) => {
    const commandId = `cmd-${++commands}`
    await agent.session.append(COMMAND_RUN_EVENT, { commandId, name: 'plan', args: rawInput })
    const result = await planMode.command.run({ agent, rawInput })
    await agent.session.append(COMMAND_DONE_EVENT, { commandId, kind: result.kind, text: result.text })
    return result
  }
  const texts = (messages: { content: unknown[] }[]) => messages.map((m) => (m.content[0] as { text: string }).text)
  return { log, a, b, agentA, agentB, plan, warnings, texts }
}

const modes = (log: SessionLog) => log.events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active)

describe('R86: a /plan another writer logs reaches this agent live', () => {
  it('R86: /plan off typed on B while A runs a turn in plan mode is applied by A at the turn\'s next step, told to the model', async () => {
    const { log, a, b, agentA, agentB, plan, texts } = writers()
    await a.set(agentA, true)
    log.append('turn/start', {})
    expect((await a.stepBoundary(agentA)).section).toBe(SECTION)
    log.append('request/header', {})
    expect(b.get(agentB)).toEqual({ active: true })
    expect(await plan(b, agentB, 'off')).toEqual({ kind: 'success', text: 'Leaving plan mode (applies from the next step).' })
    expect(a.get(agentA)).toEqual({ active: true, pending: false })
    const step = await a.stepBoundary(agentA)
    expect(step.section).toBe('')
    expect(texts(step.messages)).toEqual([LEAVING])
    expect(modes(log)).toEqual([true, false])
    expect(a.get(agentA)).toEqual({ active: false })
    // B's own P is the logged state now: it goes (R16), as a fresh attach would have none (R64).
    expect(b.get(agentB)).toEqual({ active: false })
  })

  it('R86: a heard /plan waits as P whether or not a turn is open; the next step flushes it (R12, R16)', async () => {
    const { log, a, agentA, texts } = writers()
    a.get(agentA)
    // Another writer whose own selection is still pending: its records, without its plan/mode.
    log.append(COMMAND_RUN_EVENT, { commandId: 'x-1', name: 'plan', args: 'design the cache' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'x-1', kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    expect(a.section(agentA)).toBe(SECTION)
    log.append('turn/start', {})
    const step = await a.stepBoundary(agentA)
    expect(step.section).toBe(SECTION)
    expect(texts(step.messages)).toEqual([]) // never told otherwise: no notice (R32)
    expect(modes(log)).toEqual([true])
  })

  it('R86: the writer\'s own logged /plan changes nothing more than its set did', async () => {
    const { log, a, agentA, plan } = writers()
    log.append('turn/start', {})
    expect(await plan(a, agentA, '')).toEqual({ kind: 'success', text: 'Entering plan mode (applies from the next step). Use /plan off to leave.' })
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    expect(await plan(a, agentA, 'off')).toEqual({ kind: 'success', text: 'Plan mode entry cancelled.' })
    expect(a.get(agentA)).toEqual({ active: false })
    log.append('turn/end', {})
    expect(await plan(a, agentA, '')).toEqual({ kind: 'success', text: 'Plan mode on. Use /plan off to leave.' })
    expect(a.get(agentA)).toEqual({ active: true })
    expect(modes(log)).toEqual([true])
  })

  it('R86: a `/plan` answered "already on" on a view another writer changed before its done was logged selects again: the later logged selection wins, on both writers and in the projection', async () => {
    const { log, a, b, agentA, agentB } = writers()
    await a.set(agentA, true)
    expect(b.get(agentB)).toEqual({ active: true })
    // B's user types /plan: B sees plan mode on, so its set changes nothing.
    log.append(COMMAND_RUN_EVENT, { commandId: 'b-1', name: 'plan', args: '' })
    expect(await b.command.run({ agent: agentB, rawInput: '' })).toEqual({ kind: 'success', text: 'Plan mode is already on. Use /plan off to leave.' })
    // A's user types /plan off, which commits (idle) before B's done reaches the log.
    log.append(COMMAND_RUN_EVENT, { commandId: 'a-1', name: 'plan', args: 'off' })
    expect(await a.command.run({ agent: agentA, rawInput: 'off' })).toEqual({ kind: 'success', text: 'Plan mode off.' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'a-1', kind: 'success', text: 'Plan mode off.' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'b-1', kind: 'success', text: 'Plan mode is already on. Use /plan off to leave.' })
    expect(modes(log)).toEqual([true, false])
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    expect(b.get(agentB)).toEqual({ active: false, pending: true })
    const view = planProjection.view(log.events.reduce(planProjection.apply, planProjection.init()))
    expect(view).toEqual({ active: false, pending: true })
  })

  it('R86: with P pending, a heard /plan of P\'s target changes nothing, of F cancels P, of the other target replaces it', async () => {
    const { log, a, b, agentA, agentB, plan } = writers()
    log.append('turn/start', {})
    await a.set(agentA, true)
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    await plan(b, agentB, 'again')
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    await plan(b, agentB, 'off')
    expect(a.get(agentA)).toEqual({ active: false })
    // F active with a pending leave on A; B's /plan (active) is F: it cancels the leave.
    log.append('plan/mode', { active: true })
    await a.set(agentA, false)
    expect(a.get(agentA)).toEqual({ active: true, pending: false })
    log.append(COMMAND_RUN_EVENT, { commandId: 'x-2', name: 'plan', args: '' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'x-2', kind: 'success', text: 'Plan mode is already on. Use /plan off to leave.' })
    expect(a.get(agentA)).toEqual({ active: true })
    expect(await a.stepBoundary(agentA)).toEqual({ section: SECTION, messages: expect.any(Array) })
    expect(modes(log)).toEqual([true])
  })

  it('R86: a failed run, a run this chart did not hear, another command, and a run in flight change nothing', async () => {
    const { log, a, agentA } = writers()
    log.append(COMMAND_RUN_EVENT, { commandId: 'early', name: 'plan', args: '' })
    a.get(agentA) // attaches after the run was logged
    log.append(COMMAND_DONE_EVENT, { commandId: 'early', kind: 'success', text: '' })
    expect(a.get(agentA)).toEqual({ active: false })
    log.append(COMMAND_RUN_EVENT, { commandId: 'failed', name: 'plan', args: '' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'failed', kind: 'error', text: 'nope' })
    log.append(COMMAND_RUN_EVENT, { commandId: 'other', name: 'model', args: 'opus' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'other', kind: 'success', text: '' })
    log.append(COMMAND_RUN_EVENT, { commandId: 'running', name: 'plan', args: '' })
    expect(a.get(agentA)).toEqual({ active: false })
    expect(a.actor(agentA).getSnapshot().context.heardRuns).toEqual({ running: true })
    log.append(COMMAND_DONE_EVENT, { commandId: 'running', kind: 'success', text: '' })
    expect(a.get(agentA)).toEqual({ active: false, pending: true })
    expect(a.actor(agentA).getSnapshot().context.heardRuns).toBeUndefined()
  })

  it('R86: a /plan heard while this writer\'s own plan/mode append is in flight waits for it, then is taken (regression: it was dropped)', async () => {
    const base = createMemorySessionLog()
    let release: (() => void) | undefined
    // A log whose plan/mode appends land when the test says (a database round trip).
    const session: SessionLog = {
      get events() {
        return base.events
      },
      subscribe: (listener) => base.subscribe(listener),
      append: (type, data) =>
        type === 'plan/mode' ? new Promise((resolve) => (release = () => resolve(base.append(type, data)))) : Promise.resolve(base.append(type, data)),
    }
    const a = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agentA: PlanAgent = { id: 'agent-1', session }
    base.append('turn/start', {})
    expect(await a.set(agentA, true)).toBe('queued')
    const flushing = a.stepBoundary(agentA) // its plan/mode {true} is in flight
    await flush()
    // Writer B's /plan off, logged meanwhile.
    base.append(COMMAND_RUN_EVENT, { commandId: 'b-1', name: 'plan', args: 'off' })
    base.append(COMMAND_DONE_EVENT, { commandId: 'b-1', kind: 'success', text: 'Plan mode entry cancelled.' })
    release!()
    expect((await flushing).section).toBe(SECTION)
    expect(a.get(agentA)).toEqual({ active: true, pending: false })
    const next = a.stepBoundary(agentA)
    await flush()
    release!()
    expect((await next).section).toBe('')
    expect(modes(base)).toEqual([true, false])
  })

  it('R86: a heard /plan does not reach into an open review; the review goes on and the run settles', async () => {
    const log = createMemorySessionLog()
    const review = createScriptedReview()
    const a = createPlanMode({ section: SECTION, review, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    await a.set(agent, true)
    const call = a.exitTool.execute({ plan: PLAN }, { agent })
    await review.untilAsked(1)
    log.append(COMMAND_RUN_EVENT, { commandId: 'x-3', name: 'plan', args: 'off' })
    log.append(COMMAND_DONE_EVENT, { commandId: 'x-3', kind: 'success', text: '' })
    expect(a.get(agent)).toEqual({ active: true })
    expect(a.actor(agent).getSnapshot().context.heardRuns).toBeUndefined()
    review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'] }] })
    await expect(call).rejects.toThrow('The user chose to keep planning; revise the plan and present it again.')
    await flush()
    expect(a.get(agent)).toEqual({ active: true })
  })
})

describe('R81: a durable review’s outcome is told once, whichever writer runs the step', () => {
  it('R81: after writer A told a supersede at its step, writer B (which heard the record) does not tell it again (regression)', async () => {
    const log = createMemorySessionLog()
    const make = () => createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    const [a, b] = [make(), make()]
    const agentA: PlanAgent = { id: 'agent-1', session: log }
    const agentB: PlanAgent = { id: 'agent-1', session: log }
    const texts = (messages: { content: unknown[] }[]) => messages.map((m) => (m.content[0] as { text: string }).text)
    await a.set(agentA, true)
    log.append('turn/start', {})
    await a.stepBoundary(agentA)
    log.append('request/header', {})
    await a.exitTool.execute({ plan: PLAN }, { agent: agentA })
    b.get(agentB)
    expect(await a.set(agentA, false)).toBe('queued') // supersedes the review (R48)
    const stepA = await a.stepBoundary(agentA)
    log.append('request/header', {})
    expect(texts(stepA.messages)).toEqual(['The user changed the plan mode directly; the review is closed.', LEAVING])
    const stepB = await b.stepBoundary(agentB)
    log.append('request/header', {})
    expect(texts(stepB.messages)).toEqual([])
  })
})

describe('R86, R77: a heard run keeps its agent in memory until its done', () => {
  it('R86, R77: an agent that heard a /plan run does not leave memory before the done; the done is then taken (regression)', async () => {
    const a = createPlanMode({ section: SECTION, limits: { maxAttachedAgents: 1 }, logger: { warn: () => {} } })
    const first: PlanAgent = { id: 'first', session: createMemorySessionLog() }
    const second: PlanAgent = { id: 'second', session: createMemorySessionLog() }
    const actor = a.actor(first)
    first.session.append(COMMAND_RUN_EVENT, { commandId: 'x-9', name: 'plan', args: '' })
    a.get(second) // attaching another agent over the bound would evict an idle first
    await flush()
    expect(a.get(first)).toEqual({ active: false }) // an evicted first would attach again here, knowing no run
    expect(a.actor(first)).toBe(actor)
    first.session.append(COMMAND_DONE_EVENT, { commandId: 'x-9', kind: 'success', text: '' })
    expect(a.get(first)).toEqual({ active: false, pending: true })
    await a.dispose()
  })
})
