import { describe, expect, it, vi } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PlanAgent, type ReviewAnswer, type ReviewRequest } from '../src/index.js'
import { createControlledChannel, createControlledLog, settle, track } from './sut.js'

const ABANDONED = 'plan-mode: the session log did not settle within 20 ms of a reload or detach; work in flight was abandoned'

/**
 * Counter-examples found by the model-based and property tests (test/model.test.ts,
 * test/properties.test.ts), shrunk and kept as named regressions. Each test says the shrunk
 * sequence and what SPEC requires.
 *
 * "Another writer" below is anyone else appending `plan/mode` to the same log: a second
 * service instance over the same session (another process), or a host that logs it. R16
 * provides for it: "With P present: if P's target = F, drop P".
 */

const SECTION = 'PLAN MODE'
const APPROVE: ReviewAnswer = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
const LEAVING = 'The user switched this session back to the default mode.'

function setup() {
  const log = createMemorySessionLog()
  const asks: { request: ReviewRequest; resolve(answer: ReviewAnswer): void }[] = []
  const warnings: unknown[][] = []
  const planMode = createPlanMode(
    {
      section: SECTION,
      review: { ask: (request) => new Promise((resolve) => asks.push({ request, resolve })) },
      logger: { warn: (...args: unknown[]) => warnings.push(args) },
    },
  )
  const agent: PlanAgent = { id: 'agent-1', session: log }
  const modes = () => log.events.filter((e) => e.type === 'plan/mode').map((e) => (e.data as { active: boolean }).active)
  return { log, asks, warnings, planMode, agent, modes }
}

describe('regressions found by the model-based and property tests', () => {
  // Shrunk: turn/start → set(true) → another writer logs plan/mode {true} → set(false).
  it('R9: in an open turn, a selection of the opposite of a pending target that another writer already logged is queued, not cancelled', async () => {
    const { log, planMode, agent, modes } = setup()
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    log.append('plan/mode', { active: true }) // another writer: F = P's target, so P goes (R16)
    expect(planMode.get(agent)).toEqual({ active: true })
    // x = false ≠ E (true); x ≠ F (true) → P := false, 'queued' (R9).
    expect(await planMode.set(agent, false)).toBe('queued')
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
    const boundary = await planMode.stepBoundary(agent)
    expect(modes()).toEqual([true, false])
    expect(boundary.section).toBe('')
    expect(planMode.get(agent)).toEqual({ active: false })
  })

  // Shrunk: turn/start → set(true) → another writer logs plan/mode {true} → turn/end → set(false).
  it('R10: idle, a selection of the opposite of a pending target that another writer already logged commits', async () => {
    const { log, planMode, agent, modes } = setup()
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    log.append('plan/mode', { active: true })
    log.append('turn/end', {})
    // x = false ≠ E (true); x ≠ F (true); no open turn → append plan/mode {false}, 'committed' (R10).
    expect(await planMode.set(agent, false)).toBe('committed')
    expect(modes()).toEqual([true, false])
    expect(planMode.get(agent)).toEqual({ active: false })
  })

  // Shrunk: set(true) → turn/start → /plan OFF → another writer logs plan/mode {false} → set(true).
  it('R9: in an open turn, re-entering after another writer logged a pending leave is queued, not cancelled', async () => {
    const { log, planMode, agent, modes } = setup()
    expect(await planMode.set(agent, true)).toBe('committed')
    log.append('turn/start', {})
    expect(await planMode.set(agent, false)).toBe('queued')
    log.append('plan/mode', { active: false }) // another writer: F = P's target
    expect(await planMode.set(agent, true)).toBe('queued')
    expect(planMode.get(agent)).toEqual({ active: false, pending: true })
    expect((await planMode.stepBoundary(agent)).section).toBe(SECTION)
    expect(modes()).toEqual([true, false, true])
  })

  // Shrunk: turn/start → set(true) → exit_plan_mode → approve → another writer logs plan/mode {true}
  // while the approval is recorded (or before it is answered).
  it('R47: consent while F is active leaves plan mode at the next boundary, even when the pending entry was logged by another writer', async () => {
    const { log, planMode, agent, asks, modes } = setup()
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    const call = planMode.exitTool.execute({ plan: '# Ship it\n- step' }, { agent })
    await settle()
    log.append('plan/mode', { active: true }) // another writer logs the pending entry
    asks[0]!.resolve(APPROVE)
    await expect(call).resolves.toEqual({ approved: true })
    // R47: "if F is active, P := leaving … get is { active: true, pending: false }; section(agent) is ''".
    expect(planMode.get(agent)).toEqual({ active: true, pending: false })
    expect(planMode.section(agent)).toBe('')
    const boundary = await planMode.stepBoundary(agent)
    expect(boundary).toEqual({ section: '', messages: [] })
    expect(modes()).toEqual([true, false])
  })

  // R60 as the oracle reads it: `/plan` names an agent, so after dispose it rejects (it once
  // resolved an error result instead).
  it('R60: /plan after dispose fails with "plan-mode service is disposed"', async () => {
    const { planMode, agent } = setup()
    planMode.get(agent)
    await planMode.dispose()
    await expect(planMode.command.run({ agent, rawInput: '' })).rejects.toThrow('plan-mode service is disposed')
    await expect(planMode.command.run({ agent, rawInput: 'off' })).rejects.toThrow('plan-mode service is disposed')
    await expect(planMode.command.run({ agent, rawInput: 'off', attachments: [{ type: 'image' }] })).rejects.toThrow(
      'plan-mode service is disposed',
    )
  })

  // Sanity companion of the R9 case above: without another writer the same steps narrate once.
  it('R32: a leave queued in an open turn is narrated once at the next boundary', async () => {
    const { log, planMode, agent, modes } = setup()
    expect(await planMode.set(agent, true)).toBe('committed')
    log.append('turn/start', {})
    await planMode.stepBoundary(agent)
    log.append('request/header', {})
    expect(await planMode.set(agent, false)).toBe('queued')
    const boundary = await planMode.stepBoundary(agent)
    expect(boundary.messages.map((m) => (m.content[0] as { text: string }).text)).toEqual([LEAVING])
    expect(modes()).toEqual([true, false])
  })

  // Shrunk (held-append property): set(true) with the append held → detach → set(true) → release.
  it('R3: a call after a detach waits for the detached agent\'s append in flight, so no plan/mode is appended twice (§1, R63)', async () => {
    const log = createControlledLog()
    const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.defaultFate = 'hold'
    const first = track(() => planMode.set(agent, true))
    await settle()
    planMode.detach(agent)
    const second = track(() => planMode.set(agent, true))
    await settle()
    log.defaultFate = 'ok'
    for (const held of [...log.held]) log.resolveHeld(held)
    await settle()
    await settle()
    expect(first.state).toEqual({ status: 'resolved', value: 'committed' })
    // §1: set calls of one agent are serialized; the second starts once F is true: x = E, 'noop' (R8).
    expect(second.state).toEqual({ status: 'resolved', value: 'noop' })
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
  })

  // Shrunk (held-append property): set(true) with the append held → detach → stepBoundary.
  it('R18: a step boundary after a detach waits for the detached agent\'s selection in flight (§1, R63)', async () => {
    const log = createControlledLog()
    const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.defaultFate = 'hold'
    track(() => planMode.set(agent, true))
    await settle()
    planMode.detach(agent)
    const boundary = track(() => planMode.stepBoundary(agent))
    await settle()
    // The boundary is the next operation of the agent: it starts after the set finished.
    expect(boundary.state).toEqual({ status: 'pending' })
    log.defaultFate = 'ok'
    for (const held of [...log.held]) log.resolveHeld(held)
    await settle()
    await settle()
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: SECTION, messages: [] } })
  })

  // Shrunk (held-append property): set(true) with the append held → exit_plan_mode (waits its turn) → abort.
  it('R46: a call aborted while it waits for its turn fails at once with the reason and asks nothing', async () => {
    const log = createControlledLog()
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: SECTION, review: channel, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    expect(await planMode.set(agent, true)).toBe('committed')
    log.append('turn/start', {})
    expect(await planMode.set(agent, false)).toBe('queued')
    log.defaultFate = 'hold'
    track(() => planMode.stepBoundary(agent)) // its flush is held: the call below waits its turn
    await settle()
    const controller = new AbortController()
    const call = track(() => planMode.exitTool.execute({ plan: '# Ship it' }, { agent, signal: controller.signal }))
    await settle()
    controller.abort(new Error('stopped by the host'))
    await settle()
    expect(call.state.status).toBe('rejected')
    expect(call.state.status === 'rejected' && (call.state.error as Error).message).toBe('stopped by the host')
    log.defaultFate = 'ok'
    for (const held of [...log.held]) log.resolveHeld(held)
    await settle()
    await settle()
    expect(channel.asks).toEqual([])
    expect(log.events.filter((e) => e.type === 'plan/review')).toEqual([])
  })

  // Shrunk (held-append property): /plan (append held) → set(false) → /plan off → turn/start → set(true) → release.
  it('R55: /plan off that is a noop while a leave is pending says so, even when a later queued selection cancels the leave', async () => {
    const log = createControlledLog()
    const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.defaultFate = 'hold'
    const enter = track(() => planMode.set(agent, true)) // held: the calls below queue behind it
    await settle()
    log.defaultFate = 'ok'
    const leave = track(() => planMode.set(agent, false))
    const off = track(() => planMode.command.run({ agent, rawInput: 'off' }))
    log.hostAppend('turn/start', {})
    const back = track(() => planMode.set(agent, true))
    await settle()
    log.resolveHeld(log.held[0]!)
    for (let i = 0; i < 5; i++) await settle()
    expect(enter.state).toEqual({ status: 'resolved', value: 'committed' })
    expect(leave.state).toEqual({ status: 'resolved', value: 'queued' })
    // set(false) again is a noop while the leave is pending (R55): the queued text.
    expect(off.state).toEqual({ status: 'resolved', value: { kind: 'success', text: 'Leaving plan mode (applies from the next step).' } })
    expect(back.state).toEqual({ status: 'resolved', value: 'cancelled' })
  })

  // Shrunk (held-append property): set(true) → exit_plan_mode → abort (its record is held) → exit_plan_mode.
  it('R42: an exit call made while an aborted review is being recorded waits for that settlement, then opens its own review (§1)', async () => {
    const log = createControlledLog()
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: SECTION, review: channel, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    expect(await planMode.set(agent, true)).toBe('committed')
    const controller = new AbortController()
    const first = track(() => planMode.exitTool.execute({ plan: '# Ship it' }, { agent, signal: controller.signal }))
    await settle()
    log.defaultFate = 'hold'
    controller.abort(new Error('stopped by the host')) // its plan/review {aborted} is held
    await settle()
    const second = track(() => planMode.exitTool.execute({ plan: '# Ship it, v2' }, { agent }))
    await settle()
    // §1: the settlement of the aborted review finishes first; only then does the new call run.
    expect(second.state).toEqual({ status: 'pending' })
    log.defaultFate = 'ok'
    log.resolveHeld(log.held[0]!)
    await settle()
    await settle()
    expect(first.state.status === 'rejected' && (first.state.error as Error).message).toBe('stopped by the host')
    expect(second.state).toEqual({ status: 'pending' })
    expect(channel.asks.map((ask) => ask.request.questions[0].detail)).toEqual(['# Ship it', '# Ship it, v2'])
  })

  // Shrunk (held-append property): turn/start → set(true) → exit_plan_mode → abort (record held) → set(false).
  it('R9: a selection made while an aborted review is being recorded takes its turn after that settlement (§1)', async () => {
    const log = createControlledLog()
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: SECTION, review: channel, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    const controller = new AbortController()
    track(() => planMode.exitTool.execute({ plan: '# Ship it' }, { agent, signal: controller.signal }))
    await settle()
    log.defaultFate = 'hold'
    controller.abort(new Error('stopped by the host'))
    await settle()
    const leave = track(() => planMode.set(agent, false))
    await settle()
    expect(leave.state).toEqual({ status: 'pending' })
    expect(planMode.get(agent)).toEqual({ active: false, pending: true })
    log.defaultFate = 'ok'
    log.resolveHeld(log.held[0]!)
    await settle()
    await settle()
    expect(leave.state).toEqual({ status: 'resolved', value: 'cancelled' })
    expect(planMode.get(agent)).toEqual({ active: false })
  })

  // The open question of the first sessions: approve → the record is held → detach → a step.
  it('R47, R63, R64: an approval recorded after a detach reaches the next attachment: it leaves plan mode without a notice', async () => {
    const log = createControlledLog()
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: SECTION, review: channel, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    expect(await planMode.set(agent, true)).toBe('committed')
    log.append('turn/start', {})
    log.append('request/header', {}) // K = active
    const exit = track(() => planMode.exitTool.execute({ plan: '# Ship it' }, { agent }))
    await settle()
    log.defaultFate = 'hold'
    channel.asks[0]!.resolve(APPROVE) // its plan/review {approved} is held
    await settle()
    planMode.detach(agent)
    const boundary = track(() => planMode.stepBoundary(agent))
    await settle()
    // The detached attachment still holds the agent's state; the boundary waits for it (§1).
    expect(boundary.state).toEqual({ status: 'pending' })
    expect(planMode.get(agent)).toEqual({ active: true })
    log.defaultFate = 'ok'
    log.resolveHeld(log.held[0]!)
    await settle()
    await settle()
    expect(exit.state).toEqual({ status: 'resolved', value: { approved: true } })
    // The next attachment replayed the approval (R64): K = inactive, P = leave; the flush is silent.
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: '', messages: [] } })
    expect(log.events.map((e) => e.type)).toEqual(['plan/mode', 'turn/start', 'request/header', 'plan/review', 'plan/mode'])
    expect(planMode.get(agent)).toEqual({ active: false })
  })

  // Shrunk (held-append property): /plan (append held) → /plan off → /plan OFF → turn/start → detach → stepBoundary.
  it('R55, R63: /plan calls queued behind a detach run on the next attachment, made from the log once the append in flight landed', async () => {
    const log = createControlledLog()
    const planMode = createPlanMode({ section: SECTION, logger: { warn: () => {} } })
    const agent: PlanAgent = { id: 'agent-1', session: log }
    log.defaultFate = 'hold'
    const enter = track(() => planMode.command.run({ agent, rawInput: '' }))
    const off = track(() => planMode.command.run({ agent, rawInput: 'off' }))
    const offAgain = track(() => planMode.command.run({ agent, rawInput: 'OFF' }))
    log.hostAppend('turn/start', {})
    planMode.detach(agent)
    const boundary = track(() => planMode.stepBoundary(agent))
    await settle()
    log.defaultFate = 'ok'
    log.resolveHeld(log.held[0]!)
    await settle()
    await settle()
    expect(enter.state).toEqual({ status: 'resolved', value: { kind: 'success', text: 'Plan mode on. Use /plan off to leave.' } })
    // F = active and the turn is open: the leave waits for the boundary; the second one names it (R55).
    expect(off.state).toEqual({ status: 'resolved', value: { kind: 'success', text: 'Leaving plan mode (applies from the next step).' } })
    expect(offAgain.state).toEqual({ status: 'resolved', value: { kind: 'success', text: 'Leaving plan mode (applies from the next step).' } })
    expect(boundary.state).toEqual({ status: 'resolved', value: { section: '', messages: [] } })
    expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }, { active: false }])
  })
})

describe('found by the model-based tour of the rebuilt chart', () => {
  // Shrunk: F active, a review open; set(false) supersedes it (its record held); detach; the
  // record lands. The chart said `stopped` before it handled the replayed selection, whose
  // append then started on an actor being stopped: `set` rejected "plan-mode service is
  // disposed" although nothing was disposed, and its plan/mode landed anyway.
  it('R48, R63: a detach while a superseded review is being recorded lets the replayed selection finish first', async () => {
    const log = createControlledLog([{ type: 'plan/mode', data: { active: true } }])
    const agent = { id: 'a', session: log }
    const planMode = createPlanMode({ section: SECTION, review: createControlledChannel(), logger: { warn() {} } })
    const review = track(() => planMode.exitTool.execute({ plan: '# Plan' }, { agent }))
    await settle()
    log.defaultFate = 'hold'
    const set = track(() => planMode.set(agent, false))
    await settle()
    const actor = planMode.actor(agent)
    planMode.detach(agent)
    log.resolveHeld(log.held[0]!) // the review's record lands
    await settle()
    expect(set.state).toEqual({ status: 'pending' })
    expect(actor.getSnapshot().status).toBe('active') // still waiting for the replayed selection's append
    log.resolveHeld(log.held[1]!)
    await settle()
    expect((review.state as { error?: Error }).error?.message).toBe('The user changed the plan mode directly; the review is closed.')
    expect(set.state).toEqual({ status: 'resolved', value: 'committed' })
    expect(log.events.map((e) => `${e.type} ${JSON.stringify(e.data)}`)).toEqual([
      'plan/mode {"active":true}',
      'plan/review {"outcome":"superseded","title":"Plan","plan":"# Plan"}',
      'plan/mode {"active":false}',
    ])
    expect(actor.getSnapshot().status).toBe('stopped')
    expect(planMode.get(agent)).toEqual({ active: false })
  })
})

describe('found by the deep property runs (PLAN_MODE_DEEP=1)', () => {
  // Seed -1225777747, shrunk: /plan (its plan/mode append is held) → detach → set(true) →
  // stepBoundary → the host appends turn/start → close timeout ×2 → the abandoned append lands →
  // the boundary's flush of the same target fails → stepBoundary. The next operation's R73 wait
  // gave up, so P was made on the log without the abandoned entry; it landed while the flush was
  // in flight, the flush failed, and P stayed with F already its target: the next boundary
  // flushed it again, a second identical plan/mode.
  it('R3: a pending selection whose flush fails after an abandoned append logged its target goes, and no boundary appends it again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const log = createControlledLog()
      log.defaultFate = 'hold'
      const warnings: unknown[][] = []
      const planMode = createPlanMode({ section: SECTION, limits: { closeTimeoutMs: 20 }, logger: { warn: (...args: unknown[]) => warnings.push(args) } })
      const agent: PlanAgent = { id: 'agent-1', session: log }
      const first = track(() => planMode.set(agent, true)) // held
      await settle()
      planMode.detach(agent)
      const again = track(() => planMode.set(agent, true))
      const boundary = track(() => planMode.stepBoundary(agent))
      await settle()
      log.hostAppend('turn/start', {})
      vi.advanceTimersByTime(20) // the detach abandons the first append (R73)
      await settle()
      expect(first.state).toEqual({ status: 'rejected', error: new Error(ABANDONED) })
      vi.advanceTimersByTime(20) // the next operation's wait for it gives up (R73)
      await settle()
      expect(again.state).toEqual({ status: 'resolved', value: 'queued' })
      expect(log.held.map((h) => [h.type, h.data, h.settled])).toEqual([
        ['plan/mode', { active: true }, false],
        ['plan/mode', { active: true }, false], // the boundary's flush of P
      ])
      log.resolveHeld(log.held[0]!) // the abandoned append lands after all: F is P's target
      await settle()
      log.rejectHeld(log.held[1]!, new Error('flush refused')) // R19: contained
      await settle()
      expect(boundary.state).toEqual({ status: 'resolved', value: { section: SECTION, messages: [] } })
      expect(planMode.get(agent)).toEqual({ active: true })
      const next = track(() => planMode.stepBoundary(agent))
      await settle()
      expect(next.state.status).toBe('resolved')
      expect(log.serviceAppends.filter((e) => e.type === 'plan/mode')).toHaveLength(2)
      expect(log.events.filter((e) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
      expect(warnings).toEqual([[ABANDONED, undefined], ['plan-mode: step-boundary flush failed', new Error('flush refused')]])
    } finally {
      vi.useRealTimers()
    }
  })
})
