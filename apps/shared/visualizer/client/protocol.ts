/**
 * The wire between the visualizer server and its page (`/view` WebSocket). Producers (agents'
 * inspectors) speak the inspection protocol on `/inspect`; the server numbers what it receives
 * and hands it to every page, replaying what it keeps (R109) to a page that connects late.
 */
import type { PlanDiffLine, PlanLogLine } from 'xstate-plan-mode'
import type { InspectionMessage } from 'xstate-plan-mode/inspect'
import type { StateNodeDefinition } from './model.js'

/** One received inspection message, numbered by the server in arrival order. */
export interface WireItem {
  /** Arrival order, from 1; the timeline's clock. */
  seq: number
  /**
   * Arrival time (ms since the epoch). Absent for a replayed log's messages: they arrive now but
   * happened earlier, and the page shows no time rather than a wrong one.
   */
  at?: number
  message: InspectionMessage
  /** For a `plan-mode.log` message: what the library reads in its event. */
  log?: LogReading
}

/**
 * The library's reading of one log event, made by the server (`apps/shared/visualizer/log-reading.ts`): the
 * page cannot import the library, and must not define the log's meaning a second time.
 */
export interface LogReading {
  /** The event as a timeline line (`describePlanLogEvent`); absent for a kind plan mode does not read. */
  line?: PlanLogLine
  /**
   * F after the event: the library's fold of the agent's log up to it (R2). Absent once the log
   * holds an invalid `plan/mode`, which plan mode cannot read (R61).
   */
  active?: boolean
  /** The event as a line of the session's story (the page's default timeline); absent for a kind plan mode does not read. */
  story?: StoryLine
  /** When the event happened (ms since the epoch), when the log tells (a host's `at`, `time`, … field). */
  at?: number
  /**
   * The plan the event presented (a channel review's `plan/review`, a durable review's request),
   * or whose durable review it closed, as the library's plan history reads it (`createPlanHistory`,
   * R96). Absent for any other event.
   */
  plan?: PlanReading
}

/** A plan the model presented, as it stands after the event read (R96, R97). */
export interface PlanReading {
  /** The log seq of the record that presented it: a durable review's closing record names its request's. */
  seq: number
  /** 1, 2, … within its planning episode (R96). */
  version: number
  title: string
  plan: string
  /** How its review ended, or `open` while a durable review waits for its answer (R80). */
  outcome: string
  /** The keep-planning feedback, when there was some. */
  feedback?: string
  /** Set when a headless policy decided the outcome (R94). */
  by?: 'policy'
  /** Set when the user approved it into a fresh context (R101): its record says `fresh: true`. */
  fresh?: true
  /**
   * For version 2 and later: every line of the previous version and of this one, in reading order,
   * each kept, added or removed (`diffPlans`, R97). Absent for version 1.
   */
  diff?: PlanDiffLine[]
}

/** A log event as the session's story tells it: what the user did, what the model was told, reviews, turns. */
export interface StoryLine {
  tone: 'mode' | 'review' | 'turn' | 'command' | 'notice' | 'violation' | 'log'
  label: string
  detail: string
}

/** The demo commands a page may send (demo mode only; a read-only server ignores them). */
export type DemoCommand = '/plan' | '/plan off' | DemoDecision

/** The demo's review answers: one per option of the question its service asks (`decisions: 'all'`, R101). */
export type DemoDecision = 'approve' | 'approve-fresh' | 'keep-planning' | 'leave'

/**
 * The option label each review answer selects (R43, R101): the page's buttons say what the
 * question's options say, and the demo answers with that label alone (Keep planning with feedback
 * and comments).
 */
export const DEMO_DECISION_LABELS: Readonly<Record<DemoDecision, string>> = {
  approve: 'Approve',
  'approve-fresh': 'Approve in a fresh context',
  'keep-planning': 'Keep planning',
  leave: 'Leave plan mode',
}

/** One option of the review question, as the page shows it on its button. */
export interface DemoOption {
  label: string
  description?: string
}

/**
 * A comment on the plan under review (R100): `quote` an exact excerpt of the plan (the page sends
 * the line the user clicked, without its markdown marker), `text` what the user says of it.
 */
export interface DemoComment {
  quote: string
  text: string
}

/** Server → page. */
export type ServerMessage =
  /** First on every connection; `dropped`: how many earlier messages the server no longer keeps (R109). */
  | { kind: 'hello'; demo: boolean; dropped?: number }
  | { kind: 'messages'; items: WireItem[] }
  /**
   * The demo agent's latest reply (a command's result text, or what it is doing); while its
   * review is open, the plan under review, which the page's comments quote (R100), and the
   * question's options (R101), which the page's review buttons show.
   */
  | { kind: 'demo-status'; text: string; tone: 'info' | 'error'; reviewOpen: boolean; plan?: string; options?: DemoOption[] }

/** Page → server: a demo button; Keep planning carries the feedback and the comments on the plan (R100). */
export type ViewerMessage = { kind: 'command'; command: DemoCommand; feedback?: string; comments?: DemoComment[] }

/** A plain object (not null, not an array): what every message and definition read here must be. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * The machine definition whose JSON text is `text` (as an `@xstate.actor` message carries it), or
 * undefined when the text is not a JSON object with `states`: no chart is drawn or laid out of it.
 */
export function definitionOf(text: string | undefined): StateNodeDefinition | undefined {
  if (text === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(text)
    return isRecord(parsed) && isRecord(parsed.states) ? (parsed as StateNodeDefinition) : undefined
  } catch {
    return undefined
  }
}
