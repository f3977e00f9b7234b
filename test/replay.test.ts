import fc from 'fast-check'
import { expect, it } from 'vitest'
import { EMPTY_PLAN_LOG_FOLD, PLAN_LOG_KINDS, evolvePlanLog, foldPlanLogEvent, isTurnOpen, latestApprovedPlan, replayPlanLog, restorePlanLog } from '../src/log/kinds.js'
import { foldPlanMode, type SessionEvent } from '../src/index.js'

const eventArb = fc.oneof(
  // Every kind the table has, so a kind the replay's switch misses makes the two folds disagree.
  fc.constantFrom(...Object.keys(PLAN_LOG_KINDS).filter((type) => type !== 'plan/mode'), 'message').map((type) => ({ type, data: {} })),
  fc.boolean().map((active) => ({ type: 'plan/mode', data: { active } })),
  fc.constantFrom('approved', 'keep-planning').map((outcome) => ({ type: 'plan/review', data: { outcome } })),
  // R79–R81: durable reviews' requests and records (a second record of one review is a lost answer).
  fc.constantFrom('r1', 'r2').map((reviewId) => ({ type: 'plan/review', data: { outcome: 'requested', reviewId, title: 'T', plan: '# T' } })),
  fc.tuple(fc.constantFrom('r1', 'r2'), fc.constantFrom('approved', 'keep-planning', 'superseded'), fc.boolean()).map(([reviewId, outcome, toldInResult]) => ({
    type: 'plan/review',
    data: { outcome, reviewId, title: 'T', plan: '# T', ...(toldInResult ? { toldInResult } : {}) },
  })),
  fc.tuple(fc.constantFrom('a', 'b'), fc.constantFrom('', 'off', 'draft')).map(([commandId, args]) => ({
    type: 'command/run',
    data: { commandId, name: 'plan', args },
  })),
  fc.tuple(fc.constantFrom('a', 'b'), fc.constantFrom('success', 'error')).map(([commandId, kind]) => ({
    type: 'command/done',
    data: { commandId, kind },
  })),
)

it('R64, R71: the one-pass attach replay agrees with the incremental fold and with foldPlanMode', () => {
  fc.assert(
    fc.property(fc.array(eventArb, { maxLength: 60 }), (raw) => {
      const events: SessionEvent[] = raw.map((e, i) => ({ seq: i + 1, ...e }))
      const incremental = events.reduce(foldPlanLogEvent, EMPTY_PLAN_LOG_FOLD)
      const replayed = replayPlanLog(events)
      expect(replayed.projection).toEqual(incremental.projection)
      expect([replayed.openTurn, replayed.told, replayed.review]).toEqual([incremental.openTurn, incremental.told, incremental.review])
      expect(replayed.projection.active).toBe(foldPlanMode(events))
      expect(replayed.lastSeq).toBe(events.length === 0 ? -Infinity : events.length)
    }),
    { numRuns: 500 },
  )
})

it('R64, R71: the one evolve finds every kind of the log table (a kind missing from its switch is never read)', () => {
  // A kind it reads moves the fold to its event (lastSeq), even one that changes nothing else
  // (plan/violation); a type that is not plan mode's returns the fold itself.
  for (const type of Object.keys(PLAN_LOG_KINDS)) {
    const data = type === 'plan/mode' ? { active: true } : {}
    expect({ type, lastSeq: evolvePlanLog(EMPTY_PLAN_LOG_FOLD, { seq: 1, type, data }).lastSeq }).toEqual({ type, lastSeq: 1 })
  }
  expect(evolvePlanLog(EMPTY_PLAN_LOG_FOLD, { seq: 1, type: 'message', data: {} })).toBe(EMPTY_PLAN_LOG_FOLD)
})

it('R64, R71: attach reads the log from the end and finds what the forward fold finds', () => {
  const richArb = fc.oneof(
    eventArb,
    fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.constantFrom('plan', 'other'), fc.constantFrom('', 'off')).map(([commandId, name, args]) => ({
      type: 'command/run',
      data: { commandId, name, args },
    })),
  )
  fc.assert(
    fc.property(fc.array(richArb, { maxLength: 80 }), (raw) => {
      const events: SessionEvent[] = raw.map((e, i) => ({ seq: i + 1, ...e }))
      const forward = events.reduce(foldPlanLogEvent, EMPTY_PLAN_LOG_FOLD)
      expect(restorePlanLog(events)).toEqual({
        active: forward.projection.active,
        kept: forward.projection.kept,
        openTurn: forward.openTurn,
        told: forward.told,
        review: forward.review,
        lastSeq: events.length === 0 ? -Infinity : events.length,
      })
    }),
    { numRuns: 3000 },
  )
})

it('R98, R80: the approved plan read from the end (approvedPlan at a step) is the one fold\'s, lost answers\' approvals included', () => {
  fc.assert(
    fc.property(fc.array(eventArb, { maxLength: 60 }), (raw) => {
      const events: SessionEvent[] = raw.map((e, i) => ({ seq: i + 1, ...e }))
      expect(latestApprovedPlan(events) ?? null).toEqual(replayPlanLog(events).approved)
    }),
    { numRuns: 2000 },
  )
})

it('R5: a host\'s turn check read from the end (isTurnOpen, the LangGraph adapter\'s) is the one fold\'s open turn', () => {
  fc.assert(
    // Logs of up to 60 events (`size: 'max'`): most end with several turn events, in any order.
    fc.property(fc.array(eventArb, { maxLength: 60, size: 'max' }), (raw) => {
      const events: SessionEvent[] = raw.map((e, i) => ({ seq: i + 1, ...e }))
      expect(isTurnOpen(events)).toBe(replayPlanLog(events).openTurn)
    }),
    { numRuns: 2000 },
  )
})

it('R61: attach read from the end still refuses an invalid plan/mode anywhere in the log', () => {
  const events: SessionEvent[] = [
    { seq: 1, type: 'plan/mode', data: { active: 'yes' } },
    { seq: 2, type: 'plan/mode', data: { active: true } },
    { seq: 3, type: 'turn/start', data: {} },
    { seq: 4, type: 'request/header', data: {} },
  ]
  expect(() => restorePlanLog(events)).toThrow('plan/mode carries invalid active state "yes"; expected a boolean')
})

it('R61: with two invalid plan/mode events, attach reports the first, as the forward readings do', () => {
  const events: SessionEvent[] = [
    { seq: 1, type: 'plan/mode', data: { active: 'a' } },
    { seq: 2, type: 'plan/mode', data: { active: 'b' } },
  ]
  expect(() => restorePlanLog(events)).toThrow('plan/mode carries invalid active state "a"; expected a boolean')
})

it('R58, R64: a run that is not /plan leaves an earlier /plan run of the same id open, read from the end too', () => {
  const events: SessionEvent[] = [
    { seq: 1, type: 'command/run', data: { commandId: 1, name: 'plan', args: '' } },
    { seq: 2, type: 'command/run', data: { commandId: 1, name: 'other', args: '' } },
    { seq: 3, type: 'plan/mode', data: { active: false } },
    { seq: 4, type: 'command/done', data: { commandId: 1, kind: 'success' } },
  ]
  const forward = events.reduce(foldPlanLogEvent, EMPTY_PLAN_LOG_FOLD)
  expect(forward.projection.kept).toBe(true)
  expect(restorePlanLog(events).kept).toBe(true)
})
