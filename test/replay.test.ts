import fc from 'fast-check'
import { expect, it } from 'vitest'
import { EMPTY_PLAN_LOG_FOLD, foldPlanLogEvent, replayPlanLog } from '../src/log/kinds.js'
import { foldPlanMode, type SessionEvent } from '../src/index.js'

const eventArb = fc.oneof(
  fc.constantFrom('turn/start', 'turn/end', 'request/header', 'message').map((type) => ({ type, data: {} })),
  fc.boolean().map((active) => ({ type: 'plan/mode', data: { active } })),
  fc.constantFrom('approved', 'keep-planning').map((outcome) => ({ type: 'plan/review', data: { outcome } })),
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
      expect([replayed.openTurn, replayed.told]).toEqual([incremental.openTurn, incremental.told])
      expect(replayed.projection.active).toBe(foldPlanMode(events))
      expect(replayed.lastSeq).toBe(events.length === 0 ? -Infinity : events.length)
    }),
    { numRuns: 500 },
  )
})
