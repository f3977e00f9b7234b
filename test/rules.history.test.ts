import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemorySessionLog, createPlanHistory, diffPlans, episodeBefore, formatPlanDiff, planHistory } from '../src/index.js'
import { readCheckpoint } from '../src/log/checkpoint.js'

const V1 = '# Cache the importer\n\n1. Add an LRU.\n2. Test it.'
const V2 = '# Cache the importer\n\n1. Add an LRU.\n2. Evict on write.\n3. Test it.'
const V3 = '# Cache the importer\n\n1. Add an LRU with a size bound.\n2. Evict on write.\n3. Test it.'

describe('R96: every presented plan has a version within its planning episode', () => {
  it('R96: channel records and durable requests are numbered 1, 2, … per episode; closing records settle their request; plan/mode starts a new episode', () => {
    const log = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'keep-planning', title: 'Cache the importer', plan: V1, feedback: 'Evict on write.' } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r1', title: 'Cache the importer', plan: V2 } },
      { type: 'plan/review', data: { outcome: 'approved', reviewId: 'r1', title: 'Cache the importer', plan: V2, by: 'policy' } },
      { type: 'plan/review', data: { outcome: 'approved', reviewId: 'r1', title: 'Cache the importer', plan: V2 } }, // a lost racing answer
      { type: 'plan/mode', data: { active: false } },
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'requested', reviewId: 'r2', title: 'Cache the importer', plan: V3 } },
      { type: 'plan/review', data: null },
      { type: 'plan/review', data: { outcome: 'dismissed', title: 'Cache the importer', plan: 42 } },
    ])
    expect(planHistory(log.events)).toEqual([
      { seq: 2, version: 1, title: 'Cache the importer', plan: V1, outcome: 'keep-planning', feedback: 'Evict on write.', previous: null },
      { seq: 3, version: 2, title: 'Cache the importer', plan: V2, outcome: 'approved', by: 'policy', reviewId: 'r1', previous: V1 },
      { seq: 8, version: 1, title: 'Cache the importer', plan: V3, outcome: 'open', reviewId: 'r2', previous: null },
    ])
  })

  it('R96: createPlanHistory reads event by event and tells the next version and the plan it follows', () => {
    const history = createPlanHistory()
    expect(history.next()).toEqual({ version: 1, previous: null })
    expect(history.read({ seq: 1, type: 'plan/mode', data: { active: true } })).toBeUndefined()
    expect(history.read({ seq: 2, type: 'plan/review', data: { outcome: 'keep-planning', title: 'T', plan: V1 } })).toMatchObject({ version: 1 })
    expect(history.next()).toEqual({ version: 2, previous: V1 })
    expect(history.read({ seq: 3, type: 'message', data: {} })).toBeUndefined()
    history.read({ seq: 4, type: 'plan/mode', data: { active: false } })
    expect(history.next()).toEqual({ version: 1, previous: null })
    expect(history.plans).toHaveLength(1)
  })

  it('R96: versions count up by one within every episode and restart at each plan/mode (property)', () => {
    const event = fc.oneof(
      fc.constant({ type: 'plan/mode', data: { active: true } }),
      fc.constant({ type: 'turn/start', data: {} }),
      fc.string({ maxLength: 5 }).map((plan) => ({ type: 'plan/review', data: { outcome: 'keep-planning', title: 'T', plan } })),
    )
    fc.assert(
      fc.property(fc.array(event, { maxLength: 40 }), (entries) => {
        const events = createMemorySessionLog(entries).events
        const plans = planHistory(events)
        for (const plan of plans) {
          const since = events.slice(0, plan.seq - 1)
          const start = since.map((e) => e.type).lastIndexOf('plan/mode')
          const before = since.slice(start + 1).filter((e) => e.type === 'plan/review').length
          expect(plan.version).toBe(before + 1)
        }
        expect(plans).toHaveLength(events.filter((e) => e.type === 'plan/review').length)
      }),
    )
  })
})

describe('R97: what changed between versions is a line diff from the diff library', () => {
  it('R97: diffPlans lists every line once, removed before added; a missing final newline is no change', () => {
    expect(diffPlans(V2, V3)).toEqual([
      { kind: 'same', text: '# Cache the importer' },
      { kind: 'same', text: '' },
      { kind: 'removed', text: '1. Add an LRU.' },
      { kind: 'added', text: '1. Add an LRU with a size bound.' },
      { kind: 'same', text: '2. Evict on write.' },
      { kind: 'same', text: '3. Test it.' },
    ])
    expect(diffPlans(V1, `${V1}\n`).every((line) => line.kind === 'same')).toBe(true)
  })

  it('R97: formatPlanDiff prefixes + / - / two spaces; with context, far kept lines fold into one …; nothing when nothing changed', () => {
    const lines = diffPlans(V1, V2)
    expect(formatPlanDiff(lines)).toEqual(['  # Cache the importer', '  ', '  1. Add an LRU.', '- 2. Test it.', '+ 2. Evict on write.', '+ 3. Test it.'])
    expect(formatPlanDiff(lines, 1)).toEqual(['  …', '  1. Add an LRU.', '- 2. Test it.', '+ 2. Evict on write.', '+ 3. Test it.'])
    expect(formatPlanDiff(diffPlans(V1, V1), 2)).toEqual([])
  })
})

describe('R96, R76: a host that loaded only the tail after a checkpoint numbers on', () => {
  it('R96, R76: the checkpoint carries the episode; episodeBefore gives it for a tail (the agent\'s own only, given its id), planHistory continues with v2 and its diff from v1', async () => {
    const { createCheckpoint } = await import('../src/log/checkpoint.js')
    const { replayPlanLog } = await import('../src/log/kinds.js')
    const whole = createMemorySessionLog([
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'keep-planning', title: 'Cache the importer', plan: V1 } },
      { type: 'turn/end', data: {} },
      { type: 'plan/review', data: { outcome: 'approved', title: 'Cache the importer', plan: V2 } },
    ])
    const checkpoint = createCheckpoint('agent-1', replayPlanLog(whole.events.slice(0, 3)), whole.events.slice(0, 3))!
    expect(checkpoint.episode).toEqual({ version: 1, plan: V1 })
    // The loader's events: the checkpoint's own (seq 3), then those after it.
    const tail = createMemorySessionLog(whole.events.slice(2), { checkpoint, agentId: 'agent-1' })
    expect(episodeBefore(tail)).toEqual({ version: 1, plan: V1, after: 3 })
    expect(episodeBefore(whole)).toBeNull()
    expect(planHistory(tail.events, episodeBefore(tail))).toEqual([
      { seq: 4, version: 2, title: 'Cache the importer', plan: V2, outcome: 'approved', previous: V1 },
    ])
    // A session handed another agent's checkpoint: given the agent's id, none is used (regression: it was).
    const misrouted = { ...tail, events: tail.events, checkpoint }
    expect(episodeBefore(misrouted, 'agent-2')).toBeNull()
    expect(episodeBefore(misrouted, 'agent-1')).toEqual({ version: 1, plan: V1, after: 3 })
    expect(readCheckpoint({ ...checkpoint, episode: { version: 0, plan: V1 } })).toEqual({
      problem: 'the checkpoint holds no valid fold (projection, openTurn, told, review, approved, episode)',
    })
  })
})
