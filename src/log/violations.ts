import type { SessionEvent } from './session.js'
import { violationOf, type ViolationAction } from './kinds.js'

/** One `plan/violation` record (R90), with the seq the log gave it. */
export interface ViolationEntry {
  seq: number
  tool: string
  callId: string
  action: ViolationAction
}

/** Counts of violations, by what the guard did. */
export interface ViolationCounts {
  observed: number
  blocked: number
}

/** What a log says about plan-mode violations (R92): totals, totals per tool, and every record. */
export interface ViolationFold extends ViolationCounts {
  /** Totals per tool name, in the order the tools first broke plan mode. */
  byTool: Record<string, ViolationCounts>
  /** Every readable record, in log order. */
  entries: ViolationEntry[]
}

/**
 * The violations a session log records (R92), for dashboards: a pure fold that needs no plan-mode
 * service, reading each event as the log's table does (`violationOf`: only `plan/violation`). A record whose payload is not what the guard
 * writes (a `tool` or `callId` that is not a string, an `action` other than `observed` or
 * `blocked`) is skipped: logs are untrusted input.
 */
export function foldViolations(events: readonly SessionEvent[]): ViolationFold {
  // Tool names come from the log: no prototype, so `__proto__` is a name like any other.
  const fold: ViolationFold = { observed: 0, blocked: 0, byTool: Object.create(null) as Record<string, ViolationCounts>, entries: [] }
  for (const event of events) {
    const violation = violationOf(event)
    if (violation === undefined) continue
    const { tool, callId, action } = violation
    fold[action]++
    const perTool = Object.hasOwn(fold.byTool, tool) ? fold.byTool[tool]! : (fold.byTool[tool] = { observed: 0, blocked: 0 })
    perTool[action]++
    fold.entries.push({ seq: event.seq, tool, callId, action })
  }
  return fold
}
