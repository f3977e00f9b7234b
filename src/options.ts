/**
 * The options of `createPlanMode` (R37): their types, their defaults and their checks, in one
 * place. `createPlanMode({ section })` is the whole common case; `review` says how plans are
 * reviewed, and the rest is grouped by what it is for (`checkpoints`, `limits`).
 *
 * `planModeSettings(options)` checks what a host passed (untrusted: any value, any keys) and
 * returns the settings the service runs with, defaults filled in.
 */
import type { InspectionEvent, Observer } from 'xstate'
import type { CheckpointStore } from './log/checkpoint.js'
import { DEFAULT_CLOSE_TIMEOUT_MS } from './machines/planMode.setup.js'
import type { ReviewDecisions } from './plan/review.js'
import { isTimeoutMs, MAX_TIMEOUT_MS } from './timeouts.js'
import type { PendingStore, PlanModeLogger, ReviewChannel } from './types.js'

/** The settings a service runs with: the options checked, defaults filled in. */
export interface PlanModeSettings {
  section: string
  /** The review channel; undefined for durable reviews and for none. */
  review: ReviewChannel | undefined
  /** Where reviews live (R78). */
  reviews: 'channel' | 'durable'
  decisions: ReviewDecisions
  pendingStore: PendingStore | undefined
  /** Where checkpoints are saved, and after how many events at least (R76). */
  checkpoints: { store: CheckpointStore; every: number } | undefined
  logger: PlanModeLogger
  inspect: Observer<InspectionEvent> | undefined
  /** The bounded wait of a reload or detach, in ms (R73). */
  closeTimeout: number
  /** At most this many agents stay attached (R77); undefined: no bound. */
  maxAttachedAgents: number | undefined
}

/**
 * The one argument of `createPlanMode` (R37): the plan-policy section, how plans are reviewed,
 * and the rest grouped. `{ section, review }` is the common case.
 */
export interface PlanModeOptions {
  /** The plan-policy prompt section, sent while plan mode is in force (R18); not blank (R37). */
  section: string
  /**
   * How `exit_plan_mode` asks the user (R78): a review channel, whose answer the call waits for
   * in this process (R42–R49); or `'durable'`: the log holds the review, and the answer comes
   * through `answerReview` from any process attached to the same log (R79–R81). Without it an
   * exit call fails (R42.8).
   */
  review?: ReviewChannel | 'durable'
  /**
   * Which decisions a review offers (R101): `'approve-or-keep'` (default, R43's two options) or
   * `'all'`: also Approve in a fresh context, and Leave plan mode without carrying the plan out.
   */
  decisions?: 'approve-or-keep' | 'all'
  /** Keeps pending selections across restarts (R64; by default none survive). */
  pendingStore?: PendingStore
  /**
   * Where each agent's checkpoints are saved (R76): a host that loads an agent's checkpoint and
   * only the events from it on attaches in O(tail). None by default.
   */
  checkpoints?: {
    /** Where checkpoints are saved: `save(agentId, checkpoint)` (the host's loader reads them). */
    store: CheckpointStore
    /** A checkpoint is saved when the agent goes idle after at least this many events. Default 100. */
    every?: number
  }
  /** Bounds on waiting and on memory (R73, R77). */
  limits?: {
    /**
     * How long `dispose()` and `detach()` wait for an agent's work in flight (an append, a review's
     * record) before abandoning it with one `logger.warn`, in milliseconds (R73). Default 5000.
     */
    closeTimeoutMs?: number
    /**
     * At most this many agents stay attached (R77): beyond it, the least recently used agents that
     * hold nothing their log (and pending store) does not leave memory, and attach again from the
     * log when next named. No bound by default.
     */
    maxAttachedAgents?: number
  }
  /** Where warnings about contained faults go (R19, R49, R61, R62). Default `console`. */
  logger?: PlanModeLogger
  /** An XState inspection observer (from `createPlanModeInspector` or `@statelyai/inspect`), given to every agent's actor. */
  inspect?: unknown
}

/** How many events at least a checkpoint covers beyond the last one (R76). */
export const DEFAULT_CHECKPOINT_EVERY = 100

const OPTION_KEYS = ['section', 'review', 'decisions', 'pendingStore', 'checkpoints', 'limits', 'logger', 'inspect'] as const
const OPTIONS_SHAPE = '{ section, review?, decisions?, pendingStore?, checkpoints?, limits?, logger?, inspect? }'
const CHECKPOINTS_SHAPE = '{ store, every? }'
const LIMITS_SHAPE = '{ closeTimeoutMs?, maxAttachedAgents? }'

/**
 * Checks `createPlanMode`'s options (R37, R73, R76–R78, R101) and returns the settings the
 * service runs with. The section comes first (R37), then each option in the order of
 * {@link PlanModeOptions}.
 * @throws Error for a missing, non-string or blank `section` and for unknown keys (R37);
 *   TypeError for an option with the wrong shape or value, with the message its rule fixes.
 */
export function planModeSettings(options: PlanModeOptions): PlanModeSettings {
  const given = options as Partial<PlanModeOptions> | null | undefined
  const section = given?.section
  if (typeof section !== 'string') throw new Error('PlanModeOptions needs a string `section`')
  if (section.trim() === '') throw new Error('PlanModeOptions needs a non-empty `section`')
  // Symbol keys too: a key that is no option is refused, never ignored (R37).
  const unknown = unknownKeys(options, OPTION_KEYS)
  if (unknown !== undefined) throw new Error(`PlanModeOptions has unknown key(s) ${unknown} — options are ${OPTIONS_SHAPE}`)
  // In the order of PlanModeOptions: the first failure is the one thrown.
  const review = reviewOf(options.review)
  const decisions = decisionsOf(options.decisions)
  const pendingStore = options.pendingStore
  const checkpoints = checkpointsOf(options.checkpoints)
  const limits = limitsOf(options.limits)
  return {
    section,
    ...review,
    decisions,
    pendingStore,
    checkpoints,
    logger: options.logger ?? console,
    inspect: options.inspect as Observer<InspectionEvent> | undefined,
    closeTimeout: closeTimeoutOf(limits.closeTimeoutMs),
    maxAttachedAgents: maxAttachedAgentsOf(limits.maxAttachedAgents),
  }
}

/** The keys of `value` that are not `known`, joined for a message (symbols as `Symbol(<description>)`), or undefined. */
function unknownKeys(value: object, known: readonly string[]): string | undefined {
  const unknown = Reflect.ownKeys(value).filter((key) => typeof key !== 'string' || !known.includes(key))
  return unknown.length > 0 ? unknown.map(String).join(', ') : undefined
}

/** Whether `value` is an object a group of options can be read from (not null, not an array). */
function isGroup(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The review of R78, checked: a channel (an object with an `ask` method), `'durable'`, or none. */
function reviewOf(value: unknown): Pick<PlanModeSettings, 'review' | 'reviews'> {
  if (value === undefined) return { review: undefined, reviews: 'channel' }
  if (value === 'durable') return { review: undefined, reviews: 'durable' }
  if (typeof (value as Partial<ReviewChannel> | null)?.ask === 'function') return { review: value as ReviewChannel, reviews: 'channel' }
  throw new TypeError(`plan mode option review must be a review channel (an object with an ask method) or 'durable'; got ${String(value)}`)
}

/** The decisions reviews offer (R101), checked. */
function decisionsOf(value: unknown): ReviewDecisions {
  if (value === undefined || value === 'approve-or-keep' || value === 'all') return value ?? 'approve-or-keep'
  throw new TypeError(`plan mode option decisions must be 'approve-or-keep' or 'all'; got ${String(value)}`)
}

/** The checkpoint settings of R76, checked. */
function checkpointsOf(value: unknown): PlanModeSettings['checkpoints'] {
  if (value === undefined) return undefined
  if (!isGroup(value)) throw new TypeError(`plan mode option checkpoints must be ${CHECKPOINTS_SHAPE}; got ${String(value)}`)
  const unknown = unknownKeys(value, ['store', 'every'])
  if (unknown !== undefined) throw new TypeError(`plan mode option checkpoints has unknown key(s) ${unknown} — checkpoints are ${CHECKPOINTS_SHAPE}`)
  const { store, every = DEFAULT_CHECKPOINT_EVERY } = value
  if (typeof (store as Partial<CheckpointStore> | null | undefined)?.save !== 'function') {
    throw new TypeError('plan mode option checkpoints.store needs a save(agentId, checkpoint) method')
  }
  if (typeof every !== 'number' || !Number.isSafeInteger(every) || every < 1) {
    throw new TypeError(`plan mode option checkpoints.every must be a whole number of events, at least 1; got ${String(every)}`)
  }
  return { store: store as CheckpointStore, every }
}

/** The `limits` group (R73, R77), checked for its shape; its values are checked one by one. */
function limitsOf(value: unknown): NonNullable<PlanModeOptions['limits']> {
  if (value === undefined) return {}
  if (!isGroup(value)) throw new TypeError(`plan mode option limits must be ${LIMITS_SHAPE}; got ${String(value)}`)
  const unknown = unknownKeys(value, ['closeTimeoutMs', 'maxAttachedAgents'])
  if (unknown !== undefined) throw new TypeError(`plan mode option limits has unknown key(s) ${unknown} — limits are ${LIMITS_SHAPE}`)
  return value as NonNullable<PlanModeOptions['limits']>
}

/** The close timeout of R73, checked: a number of milliseconds from 0 to `MAX_TIMEOUT_MS`. */
function closeTimeoutOf(value: unknown): number {
  if (value === undefined) return DEFAULT_CLOSE_TIMEOUT_MS
  if (!isTimeoutMs(value)) {
    throw new TypeError(`plan mode option limits.closeTimeoutMs must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}; got ${String(value)}`)
  }
  return value
}

/** The bound of R77, checked: undefined (no bound) or a whole number, at least 1. */
function maxAttachedAgentsOf(value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`plan mode option limits.maxAttachedAgents must be a whole number, at least 1; got ${String(value)}`)
  }
  return value
}
