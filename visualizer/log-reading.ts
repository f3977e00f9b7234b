/**
 * What the library reads in each agent's log, computed on the server for the page. The page is
 * browser code and cannot import the library; rather than spell the log's meaning a second time,
 * it gets every `plan-mode.log` item annotated with the library's own reading: the event's
 * timeline line (`describePlanLogEvent`, from the table of log event kinds) and F after it
 * (`foldPlanLogEvent`, R2).
 */
import { EMPTY_PLAN_LOG_FOLD, describePlanLogEvent, foldPlanLogEvent, type PlanLogFold, type SessionEvent } from 'xstate-plan-mode'
import type { LogReading } from './client/protocol.js'

/** Reads the log events of any number of agents, each agent's in the order they arrive. */
export interface LogReader {
  /** The library's reading of `event`, the next event of `agentId`'s log. */
  read(agentId: string, event: SessionEvent): LogReading
}

/** A reader with no agent seen yet. */
export function createLogReader(): LogReader {
  /** Per agent: the fold of its log so far, or null once an invalid `plan/mode` made it unreadable (R61). */
  const folds = new Map<string, PlanLogFold | null>()
  return {
    read(agentId, event) {
      let fold = folds.get(agentId)
      if (fold === undefined) fold = EMPTY_PLAN_LOG_FOLD
      // An inspector that watches the agent again sends its whole log again: seqs only grow, so
      // an event at or before the last one folded is a repeat and changes nothing.
      if (fold !== null && !(event.seq <= fold.lastSeq)) {
        try {
          fold = foldPlanLogEvent(fold, event)
        } catch {
          fold = null
        }
      }
      folds.set(agentId, fold)
      let line: LogReading['line']
      try {
        line = describePlanLogEvent(event)
      } catch {
        // A payload the line cannot be made of: the page shows the event's fields instead.
      }
      return { ...(line ? { line } : {}), ...(fold !== null ? { active: fold.projection.active } : {}) }
    },
  }
}
