import { describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanMode, type PendingStore, type PlanAgent, type ReviewAnswer } from '../src/index.js'
import { createControlledChannel, settle } from './sut.js'

const SECTION = 'PLAN MODE'
const PLAN = '# Plan\n\n1. a'

const agentsOf = (n: number): PlanAgent[] => Array.from({ length: n }, (_, i) => ({ id: `agent-${i}`, session: createMemorySessionLog() }))

describe('R77: idle agents leave memory', () => {
  it('R77: beyond maxAttachedAgents the least recently used idle agents leave memory, and attach again from their log', async () => {
    const planMode = createPlanMode({ section: SECTION, limits: { maxAttachedAgents: 2 }, logger: { warn() {} } })
    const [a, b, c] = agentsOf(3) as [PlanAgent, PlanAgent, PlanAgent]
    expect(await planMode.set(a, true)).toBe('committed')
    const actorA = planMode.actor(a)
    const actorB = planMode.actor(b)
    planMode.get(a) // a is used more recently than b
    planMode.get(c) // b leaves
    await settle()
    expect(actorB.getSnapshot().status).toBe('stopped')
    expect(actorA.getSnapshot().status).toBe('active')
    // b attaches again from its log, as a new actor; a kept its actor and F.
    expect(planMode.get(b)).toEqual({ active: false })
    expect(planMode.actor(b)).not.toBe(actorB)
    await settle()
    expect(planMode.actor(a)).not.toBe(actorA) // attaching b again made a (now the oldest) leave
    expect(planMode.get(a)).toEqual({ active: true })
  })

  it('R77: an agent with an open review, or a pending selection and no pending store, stays attached over the bound', async () => {
    const channel = createControlledChannel()
    const planMode = createPlanMode({ section: SECTION, review: channel, limits: { maxAttachedAgents: 1 }, logger: { warn() {} } })
    const [reviewing, pending, other] = agentsOf(3) as [PlanAgent, PlanAgent, PlanAgent]
    await planMode.set(reviewing, true)
    const call = planMode.exitTool.execute({ plan: PLAN }, { agent: reviewing })
    await settle()
    pending.session.append('turn/start', {})
    expect(await planMode.set(pending, true)).toBe('queued')
    const reviewingActor = planMode.actor(reviewing)
    const pendingActor = planMode.actor(pending)
    planMode.get(other)
    await settle()
    expect(reviewingActor.getSnapshot().status).toBe('active')
    expect(pendingActor.getSnapshot().status).toBe('active')
    expect(planMode.get(pending)).toEqual({ active: false, pending: true })
    channel.asks[0]!.resolve({ answers: [{ id: 'plan-review', selected: ['Approve'] }] } satisfies ReviewAnswer)
    await expect(call).resolves.toEqual({ approved: true })
  })

  it('R77: with a pending store, an agent with a pending selection may leave memory: it attaches again with the selection', async () => {
    const stored = new Map<string, boolean>()
    const pendingStore: PendingStore = { get: (id) => stored.get(id), set: (id, v) => void stored.set(id, v), delete: (id) => void stored.delete(id) }
    const planMode = createPlanMode({ section: SECTION, pendingStore, limits: { maxAttachedAgents: 1 }, logger: { warn() {} } })
    const [pending, other] = agentsOf(2) as [PlanAgent, PlanAgent]
    pending.session.append('turn/start', {})
    expect(await planMode.set(pending, true)).toBe('queued')
    const before = planMode.actor(pending)
    planMode.get(other)
    await settle()
    expect(before.getSnapshot().status).toBe('stopped')
    expect(planMode.get(pending)).toEqual({ active: false, pending: true })
  })

  it('R77: 2,000 agents touched in turn keep at most the bound attached (the bench measures 100,000)', async () => {
    const planMode = createPlanMode({ section: SECTION, limits: { maxAttachedAgents: 20 }, logger: { warn() {} } })
    const actors: { getSnapshot(): { status: string } }[] = []
    for (const agent of agentsOf(2_000)) {
      planMode.get(agent)
      actors.push(planMode.actor(agent))
      if (actors.length % 100 === 0) await settle()
    }
    await settle()
    expect(actors.filter((actor) => actor.getSnapshot().status === 'active').length).toBe(20)
  })

  it('R77: maxAttachedAgents is checked', () => {
    for (const value of [0, 2.5, -1, '10']) {
      expect(() => createPlanMode({ section: SECTION, limits: { maxAttachedAgents: value as never } })).toThrow(
        new TypeError(`plan mode option limits.maxAttachedAgents must be a whole number, at least 1; got ${String(value)}`),
      )
    }
  })
})
