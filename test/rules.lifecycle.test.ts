import { describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, planProjection, type SessionEvent } from '../src/index.js'
import { type PlanProjectionState } from '../src/log/projection.js'
import { APPROVE, createHarness, ENTERING, LEAVING, PLAN, SECTION } from './helpers.js'

const RELOADED = 'the plan-mode service was reloaded while the plan was under review; present the plan again'
const DISPOSED = 'plan-mode service is disposed'

function project(events: { type: string; data: unknown }[]) {
  let state = planProjection.init()
  events.forEach((event, i) => (state = planProjection.apply(state, { seq: i + 1, ...event })))
  return planProjection.view(state)
}
const run = (commandId: string, args?: string) => ({ type: 'command/run', data: { commandId, name: 'plan', ...(args === undefined ? {} : { args }) } })
const done = (commandId: string, kind: string) => ({ type: 'command/done', data: { commandId, kind } })
const mode = (active: boolean) => ({ type: 'plan/mode', data: { active } })
const approved = { type: 'plan/review', data: { outcome: 'approved', title: 'P', plan: '# P' } }

async function openReview(h: ReturnType<typeof createHarness>) {
  await h.planMode.set(h.agent, true)
  const asked = h.review.requests.length + 1
  const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent })
  const settled = call.then(
    () => 'approved',
    (error: Error) => error.message,
  )
  const request = await h.review.untilAsked(asked)
  return { settled, request }
}

describe('§9 projection', () => {
  it('R58: a /plan run is a candidate; its successful done keeps it; plan/mode clears it', () => {
    expect(planProjection.key).toBe('plan')
    expect(project([])).toEqual({ active: false, pending: false })
    expect(project([run('1', '')])).toEqual({ active: false, pending: true })
    expect(project([run('1', 'fix the bug')])).toEqual({ active: false, pending: true })
    expect(project([run('1', '')])).toEqual({ active: false, pending: true })
    expect(project([run('1', ' OFF ')])).toEqual({ active: false, pending: false })
    expect(project([run('1', ''), done('1', 'success')])).toEqual({ active: false, pending: true })
    expect(project([run('1', ''), done('1', 'error')])).toEqual({ active: false, pending: false })
    expect(project([run('1', ''), done('1', 'success'), mode(true)])).toEqual({ active: true, pending: false })
    expect(project([mode(true), run('1', 'off'), done('1', 'success')])).toEqual({ active: true, pending: true })
  })

  it('R58: a run without args is ignored; other commands are ignored', () => {
    expect(project([run('1')])).toEqual({ active: false, pending: false })
    expect(project([{ type: 'command/run', data: { commandId: '1', name: 'model', args: '' } }])).toEqual({
      active: false,
      pending: false,
    })
  })

  it('R58: an approved review keeps a selection of inactive', () => {
    expect(project([mode(true), approved])).toEqual({ active: true, pending: true })
    expect(project([mode(true), approved, mode(false)])).toEqual({ active: false, pending: false })
    expect(project([mode(true), { type: 'plan/review', data: { outcome: 'keep-planning', title: 'P', plan: '# P' } }])).toEqual({
      active: true,
      pending: false,
    })
  })

  it('R58: several unsettled runs are tracked by commandId; the latest settled success wins', () => {
    expect(project([run('a', ''), run('b', 'off'), done('b', 'success'), done('a', 'success')])).toEqual({
      active: false,
      pending: true,
    })
    expect(project([run('a', ''), run('b', 'off'), done('a', 'success'), done('b', 'success')])).toEqual({
      active: false,
      pending: false,
    })
    // An unsettled candidate that differs from F already shows as pending.
    expect(project([run('a', ''), run('b', 'off'), done('b', 'success')])).toEqual({ active: false, pending: true })
  })

  it('R58: irrelevant events return the same state object', () => {
    const state: PlanProjectionState = planProjection.apply(planProjection.init(), { seq: 1, ...mode(true) })
    for (const event of [
      { type: 'message', data: {} },
      { type: 'turn/start', data: {} },
      { type: 'command/done', data: { commandId: 'nope', kind: 'success' } },
      { type: 'command/run', data: { commandId: 'x', name: 'other', args: '' } },
      { type: 'plan/review', data: { outcome: 'dismissed' } },
    ]) {
      expect(planProjection.apply(state, { seq: 2, ...event })).toBe(state)
    }
  })

  it('R59: cold replays of the same log always give the same view', () => {
    const events = [mode(true), run('1', 'off'), { type: 'x', data: 1 }, done('1', 'success'), approved, run('2', '')]
    const views = Array.from({ length: 3 }, () => project(events))
    expect(views[0]).toEqual({ active: true, pending: true })
    expect(views[1]).toEqual(views[0])
    expect(views[2]).toEqual(views[0])
  })
})

describe('§10 lifecycle, faults, bad input', () => {
  it('R60: dispose fails every open review as reloaded (recorded), then stops actors and subscriptions', async () => {
    const h = createHarness()
    const other = { id: 'agent-2', session: createMemorySessionLog(), steer() {} }
    const first = await openReview(h)
    await h.planMode.set(other, true)
    const second = h.planMode.exitTool.execute({ plan: '# Other' }, { agent: other }).catch((e: Error) => e.message)
    await h.review.untilAsked(2)
    const actors = [h.planMode.actor(h.agent), h.planMode.actor(other)]
    await h.planMode.dispose()
    expect(await first.settled).toBe(RELOADED)
    expect(await second).toBe(RELOADED)
    expect(first.request.signal.aborted).toBe(true)
    expect(h.lines().filter((l) => l.startsWith('plan/review'))).toEqual([
      `plan/review {"outcome":"reloaded","title":"Migrate the database","plan":${JSON.stringify(PLAN)}}`,
    ])
    expect(actors.map((a) => a.getSnapshot().status)).toEqual(['stopped', 'stopped'])
    // An answer arriving later is ignored.
    h.review.answer(APPROVE)
    // Subscriptions ended: appending to the log reaches no actor and throws nothing.
    h.log.append('plan/mode', { active: false })
  })

  it('R60: after dispose every call naming an agent fails; a second dispose does nothing; pure members work', async () => {
    const h = createHarness()
    h.planMode.get(h.agent)
    await h.planMode.dispose()
    const { planMode, agent } = h
    expect(() => planMode.get(agent)).toThrow(new Error(DISPOSED))
    expect(() => planMode.section(agent)).toThrow(new Error(DISPOSED))
    expect(() => planMode.actor(agent)).toThrow(new Error(DISPOSED))
    expect(() => planMode.detach(agent)).toThrow(new Error(DISPOSED))
    await expect(planMode.set(agent, true)).rejects.toThrow(new Error(DISPOSED))
    await expect(planMode.stepBoundary(agent)).rejects.toThrow(new Error(DISPOSED))
    await expect(planMode.exitTool.execute({ plan: PLAN }, { agent })).rejects.toThrow(new Error(DISPOSED))
    await expect(planMode.command.run({ agent, rawInput: 'off' })).rejects.toThrow(new Error(DISPOSED))
    await expect(planMode.dispose()).resolves.toBeUndefined()
    expect(planMode.section()).toBe('')
    expect(planMode.projection.view(planMode.projection.init())).toEqual({ active: false, pending: false })
    expect(planMode.exitTool.presentCall({ plan: PLAN }).title).toBe('Migrate the database')
    expect(planMode.exitTool.presentResult({}, { content: [] })).toEqual({ card: 'generic', title: 'Plan review', content: [] })
  })

  it('R60: an answer that arrives after dispose began is ignored', async () => {
    const h = createHarness()
    const { settled } = await openReview(h)
    h.review.answer(APPROVE)
    await h.planMode.dispose()
    expect(await settled).toBe(RELOADED)
  })

  it('R60: a review answered but still waiting for its turn fails as reloaded', async () => {
    const h = createHarness()
    h.startTurn()
    await h.planMode.set(h.agent, true)
    const call = h.planMode.exitTool.execute({ plan: PLAN }, { agent: h.agent }).catch((e: Error) => e.message)
    await h.review.untilAsked(1)
    await new Promise((resolve) => setTimeout(resolve, 0)) // the exit call's operation has ended
    // A boundary whose flush is held keeps the agent busy: the answer must wait for its turn.
    h.log.failNext('plan/mode', 'hold')
    const boundary = h.planMode.stepBoundary(h.agent)
    h.review.answer(APPROVE)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(h.planMode.actor(h.agent).getSnapshot().matches({ review: { open: { undecided: 'answered' } } })).toBe(true)
    const disposed = h.planMode.dispose()
    h.log.release()
    await boundary
    await disposed
    expect(await call).toBe(RELOADED)
    expect(h.lines().filter((l) => l.startsWith('plan/review'))[0]).toMatch(/^plan\/review \{"outcome":"reloaded"/)
  })

  it('R62: with every port failing at once, actors stay active and the next boundary works', async () => {
    const log = createHarness({ async: true }).log
    const planMode = createPlanMode(
      {
        section: SECTION,
        logger: {
          warn() {
            throw new Error('logger down')
          },
        },
        review: {
          ask: () => Promise.reject(new Error('channel down')),
        },
      },
    )
    const agent = {
      id: 'a',
      session: log,
      steer() {
        throw new Error('steer down')
      },
    }
    await log.append('turn/start', {})
    expect(await planMode.set(agent, true)).toBe('queued')
    log.failNext('plan/mode', 'reject')
    log.failNext('plan/review', 'throw')
    expect((await planMode.stepBoundary(agent)).section).toBe('') // flush failed (R19)
    expect((await planMode.stepBoundary(agent)).section).toBe(SECTION) // converged
    await expect(planMode.exitTool.execute({ plan: PLAN }, { agent })).rejects.toThrow('channel down')
    expect((await planMode.command.run({ agent, rawInput: 'keep going' })).kind).toBe('error')
    log.failNext('plan/mode', 'throw')
    await log.append('turn/end', {})
    await expect(planMode.set(agent, false)).rejects.toThrow('append of plan/mode failed')
    expect(planMode.actor(agent).getSnapshot().status).toBe('active')
    expect(await planMode.stepBoundary(agent)).toEqual({ section: SECTION, messages: [] })
    expect(await planMode.set(agent, false)).toBe('committed')
  })

  it('R63: detach fails an open review like a reload and stops the actor; a later call re-attaches from the log', async () => {
    const h = createHarness()
    const { settled, request } = await openReview(h)
    const actor = h.planMode.actor(h.agent)
    h.planMode.detach(h.agent)
    expect(await settled).toBe(RELOADED)
    expect(request.signal.aborted).toBe(true)
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(actor.getSnapshot().status).toBe('stopped')
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(h.planMode.actor(h.agent)).not.toBe(actor)
    expect(h.planMode.actor(h.agent).getSnapshot().status).toBe('active')
    expect(await h.planMode.set(h.agent, false)).toBe('committed')
  })

  it('R64: attach rebuilds F, the open turn, K and P from the log', async () => {
    const seed = [
      mode(true),
      { type: 'turn/start', data: {} },
      { type: 'request/header', data: {} },
      run('7', 'off'),
      done('7', 'success'),
    ]
    const h = createHarness({ seed })
    expect(h.planMode.get(h.agent)).toEqual({ active: true, pending: false })
    // Open turn: selecting F cancels (R9) rather than committing.
    expect(await h.planMode.set(h.agent, true)).toBe('cancelled')
    await h.planMode.set(h.agent, false)
    // K = active from the header: leaving is narrated.
    expect(await h.step()).toEqual({ section: '', notices: [LEAVING] })
  })

  it('R64: attach restores F, the open turn and P through the chart and writes nothing: no pending-store write, no append', () => {
    const log = createMemorySessionLog([mode(true), { type: 'turn/start', data: {} }, run('7', 'off'), done('7', 'success')])
    const writes: string[] = []
    const stored = new Map([['b', true]])
    const pendingStore = {
      get: (id: string) => stored.get(id),
      set: (id: string, active: boolean) => void writes.push(`set ${id} ${active}`),
      delete: (id: string) => void writes.push(`delete ${id}`),
    }
    const planMode = createPlanMode({ section: SECTION, pendingStore })
    // P from the log's kept selection (a), and from the store (b, over an inactive log).
    expect(planMode.get({ id: 'a', session: log })).toEqual({ active: true, pending: false })
    expect(planMode.get({ id: 'b', session: createMemorySessionLog([{ type: 'turn/start', data: {} }]) })).toEqual({ active: false, pending: true })
    expect(writes).toEqual([])
    expect(log.events).toHaveLength(4)
  })

  it('R64: an approved exit survives a restart', async () => {
    const h = createHarness()
    await h.planMode.set(h.agent, true)
    h.startTurn()
    await h.step()
    await h.approvePlan()
    const restarted = createPlanMode({ section: SECTION })
    const agent = { id: h.agent.id, session: h.log }
    expect(restarted.get(agent)).toEqual({ active: true, pending: false })
    expect(await restarted.stepBoundary(agent)).toEqual({ section: '', messages: [] })
    expect(h.planModeLines()).toEqual([true, false])
  })

  it('R64: a /plan made after a turn’s last step survives a restart (hosts log command/run and command/done)', async () => {
    const log = createMemorySessionLog([{ type: 'turn/start', data: {} }])
    const first = createPlanMode({ section: SECTION })
    const agent = { id: 'a', session: log }
    log.append('command/run', { commandId: 'c1', name: 'plan', args: '' })
    const result = await first.command.run({ agent, rawInput: '' })
    log.append('command/done', { commandId: 'c1', kind: result.kind })
    log.append('turn/end', {})
    const restarted = createPlanMode({ section: SECTION })
    expect(restarted.get(agent)).toEqual({ active: false, pending: true })
    log.append('turn/start', {})
    expect((await restarted.stepBoundary(agent)).section).toBe(SECTION)
    expect(log.events.filter((e: SessionEvent) => e.type === 'plan/mode').map((e) => e.data)).toEqual([{ active: true }])
  })

  it('R64: a later /plan that cancelled an approved exit wins over it', async () => {
    const h = createHarness({
      seed: [mode(true), { type: 'turn/start', data: {} }, approved, run('c2', ''), done('c2', 'success')],
    })
    expect(h.planMode.get(h.agent)).toEqual({ active: true })
    expect(await h.step()).toEqual({ section: SECTION, notices: [ENTERING] })
  })
})
