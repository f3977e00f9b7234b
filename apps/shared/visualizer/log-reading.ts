/**
 * What the library reads in each agent's log, computed on the server for the page. The page is
 * browser code and cannot import the library; rather than spell the log's meaning a second time,
 * it gets every `plan-mode.log` item annotated with the library's own reading: the event's
 * timeline line (`describePlanLogEvent`, from the table of log event kinds), F after it
 * (`foldPlanLogEvent`, R2), the event as a line of the session's story, told from the same
 * fold (a step whose request followed a switch the model had not been told carried a notice, R32),
 * and the plan it presented or whose review it closed, with its version in its planning episode
 * (`createPlanHistory`, R96) and its line diff from the previous version (`diffPlans`, R97).
 *
 * It also reads what a log may hold about itself: the agent it belongs to and when each event
 * happened, for a replayed file (`plan-mode visualize <file>`).
 */
import {
  replayPlanLog,
  PLAN_MODE_TEXTS,
  PLAN_LOG_EVENTS,
  createPlanHistory,
  describePlanLogEvent,
  diffPlans,
  foldPlanLogEvent,
  type PlanHistoryReader,
  type PlanLogFold,
  type PresentedPlan,
  type SessionEvent,
} from 'xstate-plan-mode'
import type { LogReading, PlanReading, StoryLine } from './client/protocol.js'

/** Reads the log events of any number of agents, each agent's in the order they arrive. */
export interface LogReader {
  /** The library's reading of `event`, the next event of `agentId`'s log. */
  read(agentId: string, event: SessionEvent): LogReading
}

interface AgentReading {
  /** The fold of its log so far, or null once an invalid `plan/mode` made it unreadable (R61). */
  fold: PlanLogFold | null
  /** The `/command args` of each command run seen, by commandId, for the line of its outcome. */
  commands: Map<string, string>
  /** The plans its log presented, numbered within their planning episodes (R96). */
  plans: PlanHistoryReader
  /** The seq of the last event read: an event at or before it is a repeat. */
  lastSeq: number
}

/** A reader with no agent seen yet. */
export function createLogReader(): LogReader {
  const agents = new Map<string, AgentReading>()
  return {
    read(agentId, event) {
      let agent = agents.get(agentId)
      if (!agent) {
        agent = { fold: replayPlanLog([]), commands: new Map(), plans: createPlanHistory(), lastSeq: -Infinity }
        agents.set(agentId, agent)
      }
      const before = agent.fold
      // An inspector that watches the agent again sends its whole log again: seqs only grow, so
      // an event at or before the last one read is a repeat and changes nothing.
      const repeat = event.seq <= agent.lastSeq
      if (!repeat) agent.lastSeq = event.seq
      if (before !== null && !repeat) {
        try {
          agent.fold = foldPlanLogEvent(before, event)
        } catch {
          agent.fold = null
        }
      }
      // The plan history reads every event, also once F is unreadable: versions are not F's.
      const presented = repeat ? undefined : agent.plans.read(event)
      let line: LogReading['line']
      try {
        line = describePlanLogEvent(event)
      } catch {
        // A payload the line cannot be made of: the page shows the event's fields instead.
      }
      const story = storyLine(event, before, agent.commands)
      const at = eventTime(event)
      return {
        ...(line ? { line } : {}),
        ...(agent.fold !== null ? { active: agent.fold.projection.active } : {}),
        ...(story ? { story } : {}),
        ...(at !== undefined ? { at } : {}),
        ...(presented ? { plan: planReading(presented) } : {}),
      }
    },
  }
}

/**
 * A presented plan as the page gets it: a copy (a durable review's entry changes when its closing
 * record is read), with its line diff from the previous version for version 2 and later (R97).
 */
function planReading(presented: PresentedPlan): PlanReading {
  const { seq, version, title, plan, outcome, feedback, by, fresh, previous } = presented
  return {
    seq,
    version,
    title,
    plan,
    outcome,
    ...(feedback !== undefined ? { feedback } : {}),
    ...(by !== undefined ? { by } : {}),
    ...(fresh === true ? { fresh } : {}),
    ...(previous !== null ? { diff: diffPlans(previous, plan) } : {}),
  }
}

/** Outcomes of `plan/review` (R49) in words. */
const REVIEW_ENDINGS: Record<string, string> = {
  approved: 'Review answered: approved',
  'keep-planning': 'Review answered: keep planning',
  left: 'Review answered: left plan mode',
  dismissed: 'Review dismissed',
  failed: 'Review failed',
  aborted: 'Review aborted',
  superseded: 'Review closed by a mode switch',
  reloaded: 'Review closed by a reload',
}

/**
 * The event as the session's story tells it: what the user did, what the model was told, how a
 * review ended, where turns and steps begin. `before` is the fold just before the event (null
 * when the log is unreadable). Undefined for events plan mode does not read: the page tells
 * those itself (a logged notice, or the event's type and fields).
 */
function storyLine(event: SessionEvent, before: PlanLogFold | null, commands: Map<string, string>): StoryLine | undefined {
  const data = isRecord(event.data) ? event.data : {}
  switch (event.type) {
    case PLAN_LOG_EVENTS.turnStart:
      return { tone: 'turn', label: 'Turn started', detail: '' }
    case PLAN_LOG_EVENTS.turnEnd:
      return { tone: 'turn', label: 'Turn ended', detail: '' }
    case PLAN_LOG_EVENTS.mode:
      return {
        tone: 'mode',
        label: data.active === true ? 'Plan mode on' : data.active === false ? 'Plan mode off' : 'Plan mode: unreadable',
        detail: `logged plan/mode ${compactJson(event.data)}`,
      }
    case PLAN_LOG_EVENTS.review: {
      const outcome = typeof data.outcome === 'string' ? data.outcome : '?'
      const title = typeof data.title === 'string' ? `"${data.title}"` : ''
      const feedback = typeof data.feedback === 'string' ? `feedback: ${data.feedback}` : ''
      // A headless policy's decision is never told as a user's (R94, R95).
      const by = data.by === 'policy' ? ' (by policy)' : ''
      // An approval into a fresh context reads `approved (fresh context)`, as wherever a record is shown (R101).
      const ending = outcome === 'approved' && data.fresh === true ? 'Review answered: approved (fresh context)' : REVIEW_ENDINGS[outcome]
      return { tone: 'review', label: `${ending ?? `Review ended: ${outcome}`}${by}`, detail: [title, feedback].filter(Boolean).join(' — ') }
    }
    case PLAN_LOG_EVENTS.commandRun: {
      const command = `/${String(data.name)}${typeof data.args === 'string' && data.args.trim() ? ` ${data.args.trim()}` : ''}`
      if (data.commandId !== undefined) commands.set(String(data.commandId), command)
      return { tone: 'command', label: `User: ${command}`, detail: '' }
    }
    case PLAN_LOG_EVENTS.commandDone: {
      const command = commands.get(String(data.commandId))
      const failed = data.kind === 'error'
      return {
        tone: 'command',
        label: typeof data.text === 'string' && data.text ? data.text : failed ? 'The command failed.' : 'Done.',
        detail: `${failed ? 'error answering' : 'answer to'} ${command ?? 'a command'}`,
      }
    }
    case PLAN_LOG_EVENTS.requestHeader: {
      const step = typeof data.step === 'number' || typeof data.step === 'string' ? `Step ${data.step}` : 'A step'
      if (before === null) return { tone: 'turn', label: step, detail: '' }
      // R30–R32: the model works under F; a step that follows a switch it was not told of (K
      // known and not F) carried exactly one notice.
      const active = before.projection.active
      const where = active ? 'in plan mode' : 'in the default mode'
      if (before.told !== null && before.told !== active) {
        return { tone: 'notice', label: `Notice: ${PLAN_MODE_TEXTS.notices[active ? 'entering' : 'leaving']}`, detail: `${step.toLowerCase()}, the model now works ${where}` }
      }
      return { tone: 'turn', label: step, detail: `the model works ${where}` }
    }
    case PLAN_LOG_EVENTS.violation: {
      // R90: the guard's record of a side-effecting call made while plan mode was in force.
      const tool = typeof data.tool === 'string' ? data.tool : 'a tool'
      const label = data.action === 'blocked' ? `Blocked in plan mode: ${tool}` : `Ran in plan mode: ${tool}`
      return { tone: 'violation', label, detail: typeof data.callId === 'string' ? `call ${data.callId}` : '' }
    }
    default:
      return undefined
  }
}

/** Field names a host may give an event's time, on the event or in its data. */
const TIME_FIELDS = ['at', 'time', 'timestamp', 'ts'] as const
/** 2000-01-01 and 2100-01-01, in ms: a number outside is not a time of this world's logs. */
const EARLIEST = 946_684_800_000
const LATEST = 4_102_444_800_000

/**
 * When the event happened, if the log says: a field `at`, `time`, `timestamp` or `ts` of the
 * event or of its data, holding ms (or s) since the epoch or a date string. The library's own
 * events carry none (a log event is `{ seq, type, data }`), so this is whatever the host logged.
 * @returns ms since the epoch, or undefined when the event tells no time.
 */
export function eventTime(event: SessionEvent): number | undefined {
  const sources: unknown[] = [event, event.data]
  for (const source of sources) {
    if (!isRecord(source)) continue
    for (const field of TIME_FIELDS) {
      const time = readTime(source[field])
      if (time !== undefined) return time
    }
  }
  return undefined
}

function readTime(value: unknown): number | undefined {
  let ms: number | undefined
  if (typeof value === 'number' && Number.isFinite(value)) ms = value >= EARLIEST ? value : value * 1000
  else if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value)) ms = Date.parse(value)
  return ms !== undefined && ms >= EARLIEST && ms < LATEST ? ms : undefined
}

/**
 * The agent a log belongs to, if the log says: the first event that carries a non-empty string
 * `agentId`, on the event or in its data. The library's own events carry none; a host may log
 * it (e.g. in its session's first event).
 */
export function logAgentId(events: readonly SessionEvent[]): string | undefined {
  for (const event of events) {
    for (const source of [event as unknown, event.data]) {
      if (!isRecord(source)) continue
      const id = source.agentId
      if (typeof id === 'string' && id.trim() !== '') return id.trim().slice(0, 200)
    }
  }
  return undefined
}

/** JSON on one line, long values cut. */
function compactJson(value: unknown): string {
  let text: string
  try {
    text = JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > 80 ? `${text.slice(0, 77)}…` : text
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
