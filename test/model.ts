/**
 * Paths of the plan-mode statechart, generated with `xstate/graph` from the real machine, and
 * their replay on the real service against the oracle (test/model.test.ts runs them).
 *
 * The chart's appends are entry actions whose completions come back as events
 * (`PLAN_MODE.APPENDED`, ...); its one invoked actor is the review question (`askReview`), which
 * resolves with the review's result and never rejects. `createTestModel` refuses a machine that
 * invokes, so the plain traversal helper (`getAdjacencyMap`) takes it, with
 * the completions and the actor's `xstate.done.actor.<id>` event in the event list. In a traversal
 * the chart's ports are `UNATTACHED_PORTS` (and actions do not even run), so nothing completes
 * by itself: the alphabet says when. The invoke id is XState's default for an unnamed invoke,
 * read from the definition.
 *
 * The graph's alphabet is what can happen to one agent through the service:
 * - operations (`SELECT`, `STEP_BOUNDARY`, `REVIEW.OPEN`): only when no append is in flight (the
 *   facade serializes them, SPEC §1) and while the actor serves (after a detach the next call
 *   attaches a new actor). A review answered while the intent's append is in flight waits in
 *   `review.open.undecided.answered` and is recorded by the chart itself once that append landed;
 * - the host's log events, until the actor stops; a `plan/mode` while the service's own
 *   `plan/mode` append is in flight is that append being published (then `PLAN_MODE.APPENDED`
 *   may follow; `PLAN_MODE.APPEND_FAILED` only before it was published), never a foreign one;
 * - the log's answers to the held appends, and the channel's answers (`xstate.done.actor.<id>`
 *   with the review's result, as `askReview` computes it): a user's, and a headless policy's
 *   approval and dismissal (`by: 'policy'`, R94); the channel's service offers every decision
 *   (`decisions: 'all'`, R101), so a user also approves into a fresh context or leaves;
 * - the call's abort, and `RELOAD` (a detach) while the actor serves; after it only the work in
 *   flight may finish and the log be heard (`lifecycle.closing`), until the chart says `stopped`
 *   and the service stops the actor (nothing follows: the next call attaches a new one);
 * - the chart's delayed transitions (`after`), read from the definition: the close timeout of
 *   `lifecycle.closing` (R73) may expire whenever the actor is closing (a closing actor has work
 *   in flight: without any it is `stopped` at once). Its replay moves the service's clock: every
 *   replay runs under fake `setTimeout`/`clearTimeout` (XState schedules delayed events with
 *   them), so the timer fires when the path says and never by itself; `settle` uses
 *   `setImmediate`, which stays real.
 *
 * An edge into `stopped` with an append still in flight breaks R60/R63; it is left out of the
 * graph and reported (`invariantBreaks`), since the service cannot follow the oracle there.
 *
 * The state key is the state value plus the context fields that guards read (K, the decided
 * review outcome and whether a headless policy decided it (R94, R95: the record in flight says
 * so) or it is an approval into a fresh context (R101: so does the record), the `/plan` run heard and not settled (R86, one command id); for
 * durable reviews also the racing record noted, the answer in flight and the outcome left to
 * tell, and whether a `plan/mode` or a request header followed the record that closed it): all finite; never seqs, counters, results, ports or the log. (The old "detached" flag is the `lifecycle` region of the value now.)
 *
 * Three configurations: a review channel, none, and durable reviews (`reviews: 'durable'`, no
 * channel, R78–R81; `durableAlphabet`). In the first two every edge of the adjacency map is
 * replayed ("transition tour"); the durable graph is several times larger, so its edges are
 * chosen for coverage instead (`generateDurablePaths`). The edges are chained into walks
 * (`coveringWalks`): from where a walk is, the shortest way to the nearest edge not yet taken
 * that keeps the actor, then that edge, up to `MAX_WALK` letters, then the shortest way to the
 * nearest edge into `stopped` not yet taken; each walk is one path, replayed from a fresh service.
 * Its events may depend on the state (an
 * answer names the open review's id), so it is traversed here, breadth-first, with XState's pure
 * `transition` under an inspected scope that says which definition transitions each edge takes.
 */
import { isDeepStrictEqual } from 'node:util'
import { vi } from 'vitest'
import { createActor, transition, type AnyEventObject, type AnyStateMachine, type AnyStateNode, type InspectionEvent, type Observer } from 'xstate'
import { getAdjacencyMap } from 'xstate/graph'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import type { ReviewResult } from '../src/machines/planMode.events.js'
import type { PlanLogRestore } from '../src/log/kinds.js'
import { UNATTACHED_PORTS } from '../src/machines/planMode.effects.js'
import { restoreSnapshot } from '../src/machines/planMode.restore.js'
import type { PlanModeSnapshot } from '../src/machines/planMode.view.js'
import { REVIEW_MESSAGES, keepPlanningMessage, readReviewAnswer } from '../src/plan/review.js'
import { Twin, type TwinOptions } from './twin.js'
import { settle } from './sut.js'

/** The one agent of the modelled world. */
export const AGENT = 'agent-1'
/** The valid plan the model presents, and its title (R49, R51). */
export const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
export const PLAN_TITLE = 'Ship the importer'
const NO_HEADING = 'Ship the importer, no heading'
const TOO_LARGE = '# Big plan\n' + 'x'.repeat(256 * 1024)
/** The owner the twin gives an owned agent (R42.7). */
const OWNER = 'parent-agent'

const FEEDBACK = 'Use SQLite instead.'
/** The answers the channel gives in the model (R44, R45). */
export const ANSWERS = {
  approve: { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  keep: { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] },
  feedback: { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: FEEDBACK }] },
}
/** R101: the two decisions a service with `decisions: 'all'` adds (the channel's and the durable service's). */
export const DECISION_ANSWERS = {
  'approve fresh': { answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] },
  leave: { answers: [{ id: 'plan-review', selected: ['Leave plan mode'] }] },
}
/** The decisions the model's channel and durable services offer (R101); the no-channel one keeps the default. */
export const MODEL_DECISIONS = 'all' as const
/** A dismissal: a rejection with code `ASK_CANCELLED` (R46). */
export const dismissal = () => Object.assign(new Error('the user closed the dialog'), { code: 'ASK_CANCELLED' })
/** R94: a headless policy's approval, as `headlessReview({ policy: 'approve' })` answers. */
export const POLICY_APPROVAL = { answers: [{ id: 'plan-review', selected: ['Approve'] }], by: 'policy' as const }
/** R94: a headless policy's dismissal, as `headlessReview({ policy: 'stop' })` rejects. */
export const policyDismissal = () =>
  Object.assign(new Error("the headless review policy 'stop' dismissed the plan review"), { code: 'ASK_CANCELLED', by: 'policy' })
const CHANNEL_FAILURE = 'the review UI crashed'

/** What the ask effect resolves with for each answer (see `askReview`, R44–R46). */
const REVIEW_OUTPUTS: Record<keyof typeof ANSWERS | keyof typeof DECISION_ANSWERS, ReviewResult> = {
  approve: { outcome: 'approved' },
  keep: { outcome: 'keep-planning', error: keepPlanningMessage(undefined) },
  feedback: { outcome: 'keep-planning', error: keepPlanningMessage(FEEDBACK), feedback: FEEDBACK },
  'approve fresh': { outcome: 'approved', fresh: true },
  leave: { outcome: 'left', error: REVIEW_MESSAGES.left },
}

/** What a step of a path does to the twin. */
interface ReplayContext {
  twin: Twin
  /** The exit-tool call whose review is open (the one an abort aborts). */
  reviewCall?: ReturnType<Twin['execute']>
  /** The actor the path runs on (kept across a detach, whose work finishes on it). */
  actor: ReturnType<Twin['actor']>
  /** How many reviews another writer requested so far (their ids). */
  others: number
}

/** A step of a path: its label, and how the service is made to see it. */
export interface Step {
  label: string
  replay(ctx: ReplayContext): void
}

/** One event of the alphabet: the machine event, its label, and how the service is made to see it. */
export interface Letter extends Step {
  event: AnyEventObject
}

/** The service configurations the model knows: a review channel, none, or durable reviews (R78). */
export type ModelConfig = 'channel' | 'no-channel' | 'durable'

interface InvokeInfo {
  id: string
  src: string
  /** The state node that invokes it. */
  stateId: string
}

/** The invokes of the chart, from its definition. */
export function chartInvokes(): InvokeInfo[] {
  const found: InvokeInfo[] = []
  const walk = (node: AnyStateNode) => {
    for (const invoke of node.invoke) found.push({ id: invoke.id, src: String(invoke.src), stateId: node.id })
    for (const child of Object.values(node.states)) walk(child)
  }
  walk(planModeMachine.root)
  return found
}

interface DelayInfo {
  /** The delayed event's type (`xstate.after.<delay>.<state id>`). */
  eventType: string
  delay: string | number
  /** The state node whose `after` it is. */
  stateId: string
}

/** The delayed transitions (`after`) of the chart, from its definition. */
export function chartDelays(): DelayInfo[] {
  const found: DelayInfo[] = []
  const walk = (node: AnyStateNode) => {
    for (const { eventType, delay } of node.after) {
      found.push({ eventType, delay: typeof delay === 'function' ? '<expression>' : delay, stateId: node.id })
    }
    for (const child of Object.values(node.states)) walk(child)
  }
  walk(planModeMachine.root)
  return found
}

/** The close timeout of `lifecycle.closing` (R73), the one delayed transition the model knows. */
const CLOSE_TIMEOUT_STATE = 'planMode.lifecycle.closing'
/** The `closeTimeoutMs` the model's service is given (any value does: the replay moves a fake clock). */
export const CLOSE_TIMEOUT_MS = 1500

/** The delayed event of the close timeout (R73). */
function isCloseTimeout(event: AnyEventObject): boolean {
  return event.type.startsWith('xstate.after.') && event.type.endsWith(`.${CLOSE_TIMEOUT_STATE}`)
}

/** The alphabet of one agent's world; `hasChannel` picks the service's configuration. */
export function alphabet(hasChannel: boolean): Letter[] {
  const letters: Letter[] = []
  const add = (label: string, event: AnyEventObject, replay: Letter['replay']) => letters.push({ label, event, replay })

  for (const active of [true, false]) {
    add(`set(${active})`, { type: 'SELECT', active }, ({ twin }) => void twin.set(AGENT, active))
  }
  add('stepBoundary', { type: 'STEP_BOUNDARY', aborted: false }, ({ twin }) => void twin.boundary(AGENT))
  add('stepBoundary(aborted)', { type: 'STEP_BOUNDARY', aborted: true }, ({ twin }) => void twin.boundary(AGENT, true))

  const open = (label: string, plan: string, owned: boolean) =>
    add(label, { type: 'REVIEW.OPEN', plan, owner: owned ? OWNER : undefined, hasChannel }, (ctx) => {
      // The operation runs at once (nothing is in flight): the call is the open review's when it opened one.
      const before = ctx.twin.oracle.hasOpenReview(AGENT)
      const call = ctx.twin.execute(AGENT, { plan }, { owned })
      if (!before && ctx.twin.oracle.hasOpenReview(AGENT)) ctx.reviewCall = call
    })
  open('exit_plan_mode(plan)', PLAN, false)
  open('exit_plan_mode(no heading)', NO_HEADING, false)
  open('exit_plan_mode(too large)', TOO_LARGE, false)
  open('exit_plan_mode(owned agent)', PLAN, true)

  const aborts: [string, unknown, string][] = [
    ['abort(Error)', new Error('stopped by the host'), 'stopped by the host'],
    ['abort(string reason)', 'user left', REVIEW_MESSAGES.aborted],
    ['abort()', 'plain', 'This operation was aborted'],
  ]
  for (const [label, reason, message] of hasChannel ? aborts : []) {
    // The graph keeps the first snapshot found for each state key, reached by opening one review:
    // the open review is always number 1 there. On the service, the call sends its own number.
    add(label, { type: 'REVIEW.ABORT', review: 1, message }, (ctx) => ctx.twin.abort(ctx.reviewCall!, reason))
  }
  add('detach', { type: 'RELOAD' }, (ctx) => {
    ctx.actor = ctx.twin.actor(AGENT)
    ctx.twin.detach(AGENT)
  })
  // R73: the detached actor's bounded wait for its work in flight runs out.
  for (const info of chartDelays()) {
    if (info.stateId !== CLOSE_TIMEOUT_STATE || info.delay !== 'closeTimeout') {
      throw new Error(`the model does not know the delayed transition ${String(info.delay)} of ${info.stateId}`)
    }
    add('close timeout expires', { type: info.eventType }, ({ twin }) => twin.expireCloseTimeouts((ms) => vi.advanceTimersByTime(ms)))
  }

  // The log's answers to the service's held appends.
  add('plan/mode append resolves', { type: 'PLAN_MODE.APPENDED' }, ({ twin }) => twin.resolveHeld(AGENT, 'plan/mode'))
  add('plan/mode append fails', { type: 'PLAN_MODE.APPEND_FAILED', error: new Error('held append failed') }, ({ twin }) =>
    void twin.rejectHeld(AGENT, 'plan/mode'),
  )
  if (hasChannel) {
    add('plan/review append resolves', { type: 'REVIEW.RECORDED' }, ({ twin }) => twin.resolveHeld(AGENT, 'plan/review'))
    add('plan/review append fails', { type: 'REVIEW.RECORD_FAILED', error: new Error('held append failed') }, ({ twin }) =>
      void twin.rejectHeld(AGENT, 'plan/review'),
    )
  }

  // The channel's answers: the ask effect reads them and resolves with the review's result.
  for (const info of hasChannel ? chartInvokes() : []) {
    if (info.src !== 'askReview') throw new Error(`the model does not know the invoked actor ${info.src} (${info.stateId})`)
    const done = (output: ReviewResult) => ({ type: `xstate.done.actor.${info.id}`, output, actorId: info.id })
    for (const [name, answer] of Object.entries(ANSWERS) as [keyof typeof ANSWERS, (typeof ANSWERS)[keyof typeof ANSWERS]][]) {
      add(`answer ${name}`, done(REVIEW_OUTPUTS[name]), (ctx) => ctx.twin.answer(ctx.twin.openAskIndex(AGENT)!, answer))
    }
    add('dismiss review', done({ outcome: 'dismissed', error: REVIEW_MESSAGES.dismissed }), (ctx) =>
      ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, dismissal()),
    )
    // R94: a headless policy decides: the same results as a user's Approve and dismissal, and
    // the ask effect keeps who decided (`by: 'policy'`), which the record carries.
    add('answer approve by policy (R94)', done({ outcome: 'approved', by: 'policy' }), (ctx) =>
      ctx.twin.answer(ctx.twin.openAskIndex(AGENT)!, POLICY_APPROVAL),
    )
    add('dismiss review by policy (R94)', done({ outcome: 'dismissed', error: REVIEW_MESSAGES.dismissed, by: 'policy' }), (ctx) =>
      ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, policyDismissal()),
    )
    // R101: the service offers every decision: an approval into a fresh context, and a leave.
    for (const [name, answer] of Object.entries(DECISION_ANSWERS) as [keyof typeof DECISION_ANSWERS, (typeof DECISION_ANSWERS)[keyof typeof DECISION_ANSWERS]][]) {
      add(`answer ${name} (R101)`, done(REVIEW_OUTPUTS[name]), (ctx) => ctx.twin.answer(ctx.twin.openAskIndex(AGENT)!, answer))
    }
    add('review channel fails', done({ outcome: 'failed', error: CHANNEL_FAILURE }), (ctx) =>
      ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, new Error(CHANNEL_FAILURE)),
    )
  }
  // R86's letters triple the graph; the no-channel one takes them (every transition they add is
  // reached there; with a review open a heard run only settles, the same transition as an
  // unheard one's done).
  return [...letters, ...logLetters(), ...(hasChannel ? [] : commandLetters())]
}

/**
 * A `/plan` another writer logs (R86): its `command/run`, then its `command/done`. One command id
 * (`x`), so the runs the chart holds stay finite, and a second one (`SECOND_COMMAND`) only while
 * the chart holds the first one's success back; a done that is not a success takes the same
 * transition as one whose run was not heard. Only in the no-channel alphabet (see `alphabet`).
 */
function commandLetters(): Letter[] {
  const letters: Letter[] = []
  for (const [commandId, suffix] of [['x', ''], [SECOND_COMMAND, ' (second command)']] as const) {
    for (const active of [true, false]) {
      const args = active ? '' : 'off'
      letters.push({
        label: `log command/run /plan ${args}`.trimEnd() + suffix,
        event: { type: 'LOG.COMMAND_RUN', commandId, active },
        replay: ({ twin }) => twin.hostAppend(AGENT, 'command/run', { commandId, name: 'plan', args }),
      })
    }
    letters.push({
      label: `log command/done success${suffix}`,
      event: { type: 'LOG.COMMAND_DONE', commandId, success: true },
      replay: ({ twin }) => twin.hostAppend(AGENT, 'command/done', { commandId, kind: 'success' }),
    })
  }
  return letters
}

/**
 * The id of another writer's second `/plan` (R86), logged only while the chart holds the first
 * one's success back behind its own append (see `allowed`): the one that replaces it.
 */
const SECOND_COMMAND = 'y'

function logLetters(): Letter[] {
  const letters: Letter[] = []
  for (const active of [true, false]) {
    letters.push({
      label: `log plan/mode ${active}`,
      event: { type: 'LOG.PLAN_MODE', active },
      replay: ({ twin }) => {
        const held = twin.log(AGENT).held.some((h) => !h.settled && !h.published && h.type === 'plan/mode')
        if (held) twin.publish(AGENT, 'plan/mode')
        else twin.hostAppend(AGENT, 'plan/mode', { active })
      },
    })
  }
  const host: [string, string, string][] = [
    ['LOG.TURN_START', 'turn/start', 'log turn/start'],
    ['LOG.TURN_END', 'turn/end', 'log turn/end'],
    ['LOG.REQUEST_HEADER', 'request/header', 'log request/header'],
  ]
  for (const [type, logType, label] of host) {
    letters.push({ label, event: { type }, replay: ({ twin }) => twin.hostAppend(AGENT, logType, {}) })
  }
  return letters
}

// ---------------------------------------------------------------------------------------------
// The traversal

/**
 * The finite state key (see the file comment): only what the chart's guards read, and what the
 * record in flight says. For durable reviews (R79–R81): whether the decided outcome was told in
 * the result (the state says whether the record in flight is an answer, and whether a racing
 * record came first, with the same outcome or, adopted, another), and the outcome the next
 * boundary tells, if any. Whether a headless policy decided an outcome (R94, R95) goes with it:
 * the record says so, and a racing record that differs only in it is another outcome
 * (`recordsOurOutcome`). Never ids, seqs, versions or counters.
 */
export function stateKey(snapshot: PlanModeSnapshot): string {
  const { told, review, news, heardRuns } = snapshot.context
  const outcome = (result: { outcome: string; toldInResult?: boolean; by?: string; fresh?: boolean } | null | undefined) =>
    result == null
      ? null
      : [
          result.outcome,
          ...(result.fresh === true ? ['fresh'] : []),
          ...(result.toldInResult === true ? ['told in result'] : []),
          ...(result.by === 'policy' ? ['by policy'] : []),
        ].join(', ')
  return JSON.stringify({
    value: snapshot.value,
    told,
    outcome: outcome(review?.result),
    ...(news != null ? { news: news.outcome } : {}),
    // R80: what the log reported after the record that closed the review, ours still in flight.
    ...(review?.afterClosing !== undefined ? { afterClosing: review.afterClosing } : {}),
    ...(heardRuns !== undefined ? { runs: heardRuns } : {}),
  })
}

/**
 * What the alphabet's conditions read of a snapshot, worked out once per snapshot: a traversal
 * asks them for every letter at every vertex (the durable graph's 5,456 vertices, some 40 letters
 * each), and each `matches` allocates.
 */
interface Facts {
  /** The lifecycle region's state: `serving`, `closing` or `stopped` (R73). */
  lifecycle: string
  /** A state tagged `appending` is active: no selection, boundary or review opens (docs/spec.md §1). */
  appending: boolean
  /** A review's outcome is being recorded (R49): `recording`, an answer's `answering` (R80), or a switch's `superseded` (R48, its record first). */
  recording: boolean
  /** The review's request is being appended (R79). */
  requesting: boolean
  /** The open review waits for its answer. */
  awaiting: boolean
  /** The `plan/mode` target of the intent's append in flight, if any. */
  target: boolean | undefined
  /** F: plan mode is on (`mode.active`). */
  active: boolean
  /** The intent's append in flight holds a heard `/plan`'s success back (R86: `runWaits`). */
  holdsSuccess: boolean
}
const factsOf = new WeakMap<PlanModeSnapshot, Facts>()

/** The {@link Facts} of `s`. */
function facts(s: PlanModeSnapshot): Facts {
  let known = factsOf.get(s)
  if (known !== undefined) return known
  const matches = (value: unknown) => s.matches(value as never)
  // An idle selection commits from `logged` (committing.*); a boundary flushes P (pending.*.flushing).
  const entering = [{ intent: { committing: 'entering' } }, { intent: { pending: { entering: 'flushing' } } }]
  const leaving = [{ intent: { committing: 'leaving' } }, { intent: { pending: { leaving: 'flushing' } } }]
  known = {
    lifecycle: (s.value as { lifecycle: string }).lifecycle,
    appending: s.hasTag('appending'),
    recording: matches({ review: { open: 'recording' } }) || matches({ review: { open: 'answering' } }) || matches({ review: { open: 'superseded' } }),
    requesting: matches({ review: { open: 'requesting' } }),
    awaiting: matches({ review: { open: { undecided: 'awaiting' } } }),
    target: entering.some(matches) ? true : leaving.some(matches) ? false : undefined,
    active: matches({ mode: 'active' }),
    holdsSuccess: JSON.stringify(s.value.intent).includes('"runWaits"'),
  }
  factsOf.set(s, known)
  return known
}

/** {@link Facts.recording} of `s`. */
function isRecordingReview(s: PlanModeSnapshot): boolean {
  return facts(s).recording
}

/** What the service lets happen in `s` (see the file comment). */
function allowed(s: PlanModeSnapshot, event: AnyEventObject): boolean {
  const can = (e: AnyEventObject) => s.can(e as never)
  const known = facts(s)
  const serving = known.lifecycle === 'serving'
  const closing = known.lifecycle === 'closing'
  const { target, active: F } = known
  // R86: command ids are unique. The model's first id stands for a new command only once the
  // chart let go of the last: while it holds a success back (behind its own `plan/mode` append),
  // another run or done of that id would be a reused id, which the spec rules out. The second id
  // is another writer's next `/plan`, heard only while the chart holds a success back and serves:
  // its run, then at once its done (which replaces the success waiting), so that the graph stays
  // small.
  const second = (event as { commandId?: string }).commandId === SECOND_COMMAND
  if (event.type === 'LOG.COMMAND_RUN' || event.type === 'LOG.COMMAND_DONE') {
    if (second !== known.holdsSuccess) return false
    if (second && !serving) return false
  }
  const secondRuns = s.context.heardRuns !== undefined && Object.hasOwn(s.context.heardRuns, SECOND_COMMAND)
  if (secondRuns && !(event.type === 'LOG.COMMAND_DONE' && second)) return false
  switch (event.type) {
    // The work in flight may land even after a detach. Every intent append starts with F ≠ its
    // target, so F = target says it was published: it may resolve, no longer fail.
    case 'PLAN_MODE.APPENDED':
      return target !== undefined && F === target
    case 'PLAN_MODE.APPEND_FAILED':
      return target !== undefined && F !== target
    case 'REVIEW.RECORDED':
    case 'REVIEW.RECORD_FAILED':
      return known.recording
    case 'LOG.PLAN_MODE':
      if (target !== undefined) return event.active === target && F !== target
  }
  // R73: a closing actor's wait for its work in flight may run out (and only a closing actor's).
  if (isCloseTimeout(event)) return closing
  // A detached actor only finishes its work, still hearing the log until it stops; the next
  // call attaches a new one.
  if (!serving) return closing && event.type.startsWith('LOG.') && can(event)
  switch (event.type) {
    case 'SELECT':
    case 'STEP_BOUNDARY':
    case 'REVIEW.OPEN':
      return !known.appending
    case 'RELOAD':
      return true
    default:
      // The channel's answers, the call's abort, the host's log events: when the chart reacts
      // (a redundant host `plan/mode` is another writer's bug, R3, and not modelled).
      return can(event)
  }
}

/**
 * The chart stops (`lifecycle.stopped`: the service stops the actor) while an append is still in
 * flight: R60/R63 say the work in flight lands first. Such an edge is a chart bug, not something
 * the service can replay against the oracle: the model leaves it out and reports it
 * (`invariantBreaks`, checked by its own test).
 */
function stopsWithWorkInFlight(
  s: PlanModeSnapshot,
  event: AnyEventObject,
  step: (s: PlanModeSnapshot, event: AnyEventObject) => PlanModeSnapshot = (s, event) => transition(planModeMachine, s, event as never)[0] as PlanModeSnapshot,
): PlanModeSnapshot | undefined {
  if (s.matches({ lifecycle: 'stopped' })) return undefined
  const next = step(s, event)
  return next.matches({ lifecycle: 'stopped' }) && next.hasTag('appending') ? next : undefined
}

/** A generated path: the letters to replay and the state key expected after each. */
export interface ModelPath {
  letters: Step[]
  /** The state key after each letter. */
  keys: string[]
  config: ModelConfig
}

/** What the generation of one configuration gives. */
export interface GeneratedPaths {
  paths: ModelPath[]
  vertices: number
  edges: number
  /** Paths ending in an edge that breaks `stopsWithWorkInFlight` (left out of the graph). */
  invariantBreaks: ModelPath[]
  /**
   * R73, for a configuration whose paths are chosen for coverage (durable): every closing
   * vertex of its graph, with the state key its close timeout leads to (absent: not allowed).
   */
  closingTimeouts?: Map<string, string | undefined>
}

/**
 * Generates the paths of one configuration: walks that take every edge of the channel and
 * no-channel graphs (the transition tour), and walks that take a coverage-chosen set of the
 * durable graph's edges (`generateDurablePaths`). A shortest path leads to each invariant break.
 */
export function generatePaths(config: ModelConfig): GeneratedPaths {
  if (config === 'durable') return generateDurablePaths()
  const hasChannel = config === 'channel'
  const letters = alphabet(hasChannel)
  const byEvent = new Map(letters.map((l) => [l.event, l]))
  const events = letters.map((l) => l.event)
  const breaks = new Map<string, { source: string; letter: Letter; next: string }>()
  // Each edge's transition is taken once, by the filter's check of R60/R63, and the traversal
  // reads it back (XState's pure `transition` made an actor per call, and the traversal took the
  // transition again); one inert scope serves them all, as the traversal's own did. Each
  // snapshot's key is computed once too (the traversal and the edge list both read it).
  const scope = inertScope(createActor(planModeMachine))
  const taken = new WeakMap<PlanModeSnapshot, Map<AnyEventObject, PlanModeSnapshot>>()
  const step = (s: PlanModeSnapshot, e: AnyEventObject): PlanModeSnapshot => {
    let from = taken.get(s)
    if (from === undefined) taken.set(s, (from = new Map()))
    let next = from.get(e)
    if (next === undefined) from.set(e, (next = planModeMachine.transition(s, e as never, scope as never) as PlanModeSnapshot))
    return next
  }
  const keys = new WeakMap<PlanModeSnapshot, string>()
  const keyOf = (snapshot: PlanModeSnapshot): string => keys.get(snapshot) ?? keys.set(snapshot, stateKey(snapshot)).get(snapshot)!
  const logic = Object.create(planModeMachine, { transition: { value: (s: PlanModeSnapshot, e: AnyEventObject) => step(s, e) } }) as AnyStateMachine
  const options = {
    events,
    filterEvents: (s: PlanModeSnapshot, e: AnyEventObject) => {
      if (!allowed(s, e)) return false
      const broken = stopsWithWorkInFlight(s, e, step)
      if (!broken) return true
      const letter = byEvent.get(e)!
      breaks.set(`${keyOf(s)} ${letter.label}`, { source: keyOf(s), letter, next: keyOf(broken) })
      return false
    },
    serializeState: (snapshot: PlanModeSnapshot) => keyOf(snapshot),
    serializeEvent: (e: AnyEventObject) => byEvent.get(e)?.label ?? JSON.stringify(e),
  }
  const adjacency = getAdjacencyMap(logic, options as never) as unknown as Record<
    string,
    { state: PlanModeSnapshot; transitions: Record<string, { event: AnyEventObject; state: PlanModeSnapshot }> }
  >
  const out = new Map<string, Edge[]>()
  let edges = 0
  for (const [key, { transitions }] of Object.entries(adjacency)) {
    const from: Edge[] = []
    for (const { event, state } of Object.values(transitions)) {
      edges++
      from.push({ letter: byEvent.get(event)!, next: keyOf(state) })
    }
    out.set(key, from)
  }
  const initialKey = stateKey(createActor(planModeMachine).getSnapshot() as PlanModeSnapshot)
  // The shortest path to each vertex (breadth-first), for the invariant breaks' paths.
  const heads = new Map<string, { letters: Step[]; keys: string[] }>([[initialKey, { letters: [], keys: [] }]])
  for (const [key] of heads) {
    const head = heads.get(key)!
    for (const { letter, next } of out.get(key) ?? []) {
      if (!heads.has(next)) heads.set(next, { letters: [...head.letters, letter], keys: [...head.keys, next] })
    }
  }
  const invariantBreaks = [...breaks.values()].map(({ source, letter, next }) => {
    const head = heads.get(source)!
    return { letters: [...head.letters, letter], keys: [...head.keys, next], config }
  })
  const walks = coveringWalks(config, initialKey, out, new Set([...out.values()].flat()))
  return { paths: walks, vertices: Object.keys(adjacency).length, edges, invariantBreaks }
}

/** An edge of a configuration's graph: the letter, and the state key it leads to. */
interface Edge {
  letter: Step
  next: string
}

/**
 * The most letters a walk takes before it heads for the edge it ends with (from the initial
 * state): long enough that a walk covers many edges, short enough that a failing walk reads as a
 * story.
 */
export const MAX_WALK = 16

/**
 * Walks of the graph `out` (edges by source key) from `initial` that together take every edge of
 * `cover` (and every vertex those reach), chained rather than one path per edge. An edge into
 * `stopped` (a detach with nothing in flight, a close timeout) ends the walk that takes it (the
 * service stops the actor: nothing follows), so every such edge needs a walk of its own and each
 * walk ends with one: from where the walk is, it goes the shortest way to the nearest untaken
 * edge that does not stop the actor and takes it, until the next such route would pass
 * `MAX_WALK` letters; then the shortest way to the nearest untaken edge into `stopped`, and the
 * next walk starts from the initial state. (Taking the nearest untaken edge of either kind ended
 * a walk at the first edge into `stopped` it came to, and more walks at `MAX_WALK` on the way to
 * nothing: 6,461 walks of 70,184 letters, now 5,208 of 64,412.) Each walk is a path that replays
 * from scratch; its name says every letter.
 */
function coveringWalks(config: ModelConfig, initial: string, out: ReadonlyMap<string, readonly Edge[]>, cover: ReadonlySet<Edge>): ModelPath[] {
  // The graph in arrays (vertex and edge numbers): a breadth-first search runs after every
  // route taken, over tens of thousands of edges in the durable graph.
  const ids = new Map<string, number>()
  const id = (key: string) => ids.get(key) ?? ids.set(key, ids.size).get(key)!
  id(initial)
  for (const [key, edges] of out) for (const edge of [{ next: key }, ...edges]) id(edge.next)
  const keys = [...ids.keys()]
  const edgeList: Edge[] = []
  // The edges of a vertex are numbered one after another: those of `v` are `begin[v]` up to `end[v]`.
  const begin = new Int32Array(keys.length)
  const end = new Int32Array(keys.length)
  for (const [key, edges] of out) {
    begin[id(key)] = edgeList.length
    edgeList.push(...edges)
    end[id(key)] = edgeList.length
  }
  const target = Int32Array.from(edgeList, (edge) => id(edge.next))
  const untaken = Uint8Array.from(edgeList, (edge) => (cover.has(edge) ? 1 : 0))
  const source = new Int32Array(edgeList.length)
  for (let v = 0; v < keys.length; v++) source.fill(v, begin[v]!, end[v]!)
  /** 1 for an edge into a vertex nothing leaves (`stopped`): a walk that takes it ends there. */
  const ends = Uint8Array.from(target, (t) => (begin[t] === end[t] ? 1 : 0))
  /** How many untaken edges leave each vertex: `left[0][v]` those a walk goes on after, `left[1][v]` those it ends with. */
  const left = [new Int32Array(keys.length), new Int32Array(keys.length)] as const
  for (let e = 0; e < edgeList.length; e++) left[ends[e] as 0 | 1][source[e]!]! += untaken[e]!
  let remaining = untaken.reduce((n, u) => n + u, 0)
  const seen = new Int32Array(keys.length).fill(-1)
  const via = new Int32Array(keys.length)
  const queue = new Int32Array(keys.length)
  let search = 0
  /** The edges of the shortest way from `start` to the nearest untaken edge of the kind (`ends`), that edge last (breadth-first). */
  const nearest = (start: number, kind: 0 | 1): number[] | undefined => {
    const wanted = left[kind]
    /** The way to `vertex`, then its first untaken edge of the kind. */
    const routeTo = (vertex: number) => {
      let first = begin[vertex]!
      while (untaken[first] !== 1 || ends[first] !== kind) first++
      const route = [first]
      for (let at = vertex; at !== start; ) {
        const e = via[at]!
        route.unshift(e)
        at = source[e]!
      }
      return route
    }
    if (wanted[start]! > 0) return routeTo(start)
    search++
    seen[start] = search
    queue[0] = start
    for (let head = 0, tail = 1; head < tail; head++) {
      const vertex = queue[head]!
      for (let e = begin[vertex]!; e < end[vertex]!; e++) {
        const next = target[e]!
        if (seen[next] === search) continue
        seen[next] = search
        via[next] = e
        // The queue is first in, first out: the first vertex found with an untaken edge is the
        // first the search would take out of it.
        if (wanted[next]! > 0) return routeTo(next)
        queue[tail++] = next
      }
    }
    return undefined
  }
  const walks: ModelPath[] = []
  while (remaining > 0) {
    const walk: ModelPath = { letters: [], keys: [], config }
    let at = 0 // the initial state
    const take = (route: number[]) => {
      for (const e of route) {
        if (untaken[e] === 1) {
          untaken[e] = 0
          left[ends[e] as 0 | 1][source[e]!]!--
          remaining--
        }
        walk.letters.push(edgeList[e]!.letter)
        walk.keys.push(keys[target[e]!]!)
      }
      at = target[route.at(-1)!]!
    }
    for (;;) {
      const route = nearest(at, 0)
      if (route === undefined || (walk.letters.length > 0 && walk.letters.length + route.length > MAX_WALK)) break
      take(route)
    }
    const last = nearest(at, 1)
    if (last !== undefined) take(last)
    if (walk.letters.length === 0) throw new Error(`${remaining} edges of the ${config} graph cannot be reached from its initial state`)
    walks.push(walk)
  }
  return walks
}

/** A path's name: its letters. */
export function pathName(path: ModelPath): string {
  const name = path.letters.map((l) => l.label).join(' → ') || '(initial)'
  return path.config === 'channel' ? name : `[${path.config === 'durable' ? 'durable reviews' : 'no review channel'}] ${name}`
}

// ---------------------------------------------------------------------------------------------
// Durable reviews (R78–R81)

/** The framework's id of the exit calls in the durable model (R79: the request carries it). */
const CALL_ID = 'call-1'
/** The plan of a review another writer (another process on the same log) requests. */
const OTHER_PLAN = '# Migrate the schema\n\n1. Add the column.'
const OTHER_TITLE = 'Migrate the schema'
/** The feedback another writer's keep-planning record carries. */
const OTHER_FEEDBACK = 'Ask the DBA first.'

/** A letter of the durable alphabet: the chart events it means in a snapshot, if it can happen there. */
interface DurableLetter extends Step {
  /** The chart events, in order (none: the chart does not hear it), or undefined when it cannot happen in `s`. */
  eventsIn(s: PlanModeSnapshot): AnyEventObject[] | undefined
}

/** Ids made up for the traversal; the replay uses the service's own (ids are never in the state key). */
let graphIds = 0
const graphId = (kind: string) => `graph-${kind}-${++graphIds}`

/**
 * The alphabet of a durable service (`reviews: 'durable'`, no channel: R78–R81). Operations run
 * only while nothing is appending (§1); the service's held `plan/review` append (a request, an
 * answer, a supersede) resolves (it lands: the log reports it, then `append` resolves) or fails;
 * the host logs turns, headers and foreign `plan/mode` as in the other configurations.
 *
 * Another writer (another process on the same log) requests a review, or closes the open one,
 * while no append of this service is in flight, and closes it also while this service's own
 * record of it is in flight (two answers racing, R80), but not with a record identical to ours
 * (same outcome, feedback, telling and decider): the chart cannot tell such a record from its own
 * echo, and R80 says the later one lost. Its records while another append of this service is in
 * flight (a request, a `plan/mode`) are not modelled.
 *
 * A headless policy (R95) answers like `answerReview`, with `answerReviewByPolicy(approve|stop)`,
 * and another writer's policy approves; a policy's record differs from a user's in `by` alone, so
 * a policy's and a user's approval of one review race (R95: the second in the log lost).
 *
 * The service offers every decision (R101): `answerReview` approves into a fresh context or
 * leaves, told in the result and not, and another writer's user leaves (untold). A fresh
 * approval's record differs from a plain one's in `fresh` alone, so another writer's plain
 * approval races it; a leave in flight races an approval.
 */
export function durableAlphabet(): DurableLetter[] {
  const letters: DurableLetter[] = []
  const add = (label: string, eventsIn: DurableLetter['eventsIn'], replay: Step['replay']) => letters.push({ label, eventsIn, replay })
  const lifecycle = (s: PlanModeSnapshot) => facts(s).lifecycle
  const operation = (s: PlanModeSnapshot) => lifecycle(s) === 'serving' && !facts(s).appending
  const requesting = (s: PlanModeSnapshot) => facts(s).requesting
  const awaiting = (s: PlanModeSnapshot) => facts(s).awaiting
  const hears = (s: PlanModeSnapshot) => lifecycle(s) !== 'stopped'
  const openId = (s: PlanModeSnapshot) => s.context.review?.durable?.reviewId
  /** The open review as the oracle knows it: the replay answers and closes the service's own ids. */
  const openReview = (ctx: ReplayContext) => {
    const open = ctx.twin.oracle.reviewHeldOpen(AGENT)
    if (!open) throw new Error(`the oracle holds no open durable review\n${ctx.twin.trace.join('\n')}`)
    return open
  }

  for (const active of [true, false]) {
    add(`set(${active})`, (s) => (operation(s) ? [{ type: 'SELECT', active }] : undefined), ({ twin }) => void twin.set(AGENT, active))
  }
  for (const aborted of [false, true]) {
    add(
      aborted ? 'stepBoundary(aborted)' : 'stepBoundary',
      (s) => (operation(s) ? [{ type: 'STEP_BOUNDARY', aborted }] : undefined),
      ({ twin }) => void twin.boundary(AGENT, aborted),
    )
  }
  const open = (label: string, plan: string, owned: boolean) =>
    add(
      label,
      (s) =>
        operation(s)
          ? [{ type: 'REVIEW.OPEN', plan, owner: owned ? OWNER : undefined, hasChannel: false, durable: { reviewId: graphId('own'), callId: CALL_ID } }]
          : undefined,
      (ctx) => {
        ctx.reviewCall = ctx.twin.execute(AGENT, { plan }, { owned, callId: CALL_ID })
      },
    )
  open('exit_plan_mode(plan)', PLAN, false)
  open('exit_plan_mode(no heading)', NO_HEADING, false)
  open('exit_plan_mode(too large)', TOO_LARGE, false)
  open('exit_plan_mode(owned agent)', PLAN, true)
  // R79: once the call's turn came, the request is the log's: an abort changes nothing.
  add('abort the exit call', (s) => (hears(s) && requesting(s) ? [] : undefined), (ctx) =>
    ctx.twin.abort(ctx.reviewCall!, new Error('stopped by the host')),
  )

  // R80: the user's answers to the open review, from any process.
  // R101: the service offers every decision; an approval into a fresh context and a leave are
  // answered told in the result and not (R81).
  const answers: [string, (typeof ANSWERS)[keyof typeof ANSWERS] | (typeof DECISION_ANSWERS)[keyof typeof DECISION_ANSWERS], boolean][] = [
    ['approve', ANSWERS.approve, false],
    ['approve, told in result', ANSWERS.approve, true],
    ['keep', ANSWERS.keep, false],
    ['feedback', ANSWERS.feedback, false],
    ['approve fresh (R101)', DECISION_ANSWERS['approve fresh'], false],
    ['approve fresh, told in result (R101)', DECISION_ANSWERS['approve fresh'], true],
    ['leave (R101)', DECISION_ANSWERS.leave, false],
    ['leave, told in result (R101)', DECISION_ANSWERS.leave, true],
  ]
  for (const [name, answer, toldInResult] of answers) {
    add(
      `answerReview(${name})`,
      (s) =>
        operation(s) && openId(s) !== undefined
          ? [{ type: 'REVIEW.ANSWER', reviewId: openId(s), verdict: readReviewAnswer(answer, undefined, MODEL_DECISIONS), toldInResult }]
          : undefined,
      (ctx) => void ctx.twin.answerReview(AGENT, openReview(ctx).reviewId, answer, { toldInResult }),
    )
  }
  add(
    'answerReview(unknown id)',
    (s) => (operation(s) ? [{ type: 'REVIEW.ANSWER', reviewId: 'no-such-review', verdict: readReviewAnswer(ANSWERS.approve), toldInResult: false }] : undefined),
    (ctx) => void ctx.twin.answerReview(AGENT, 'no-such-review', ANSWERS.approve),
  )
  add(
    'answerReview(the review closed last)',
    (s) => {
      const closed = s.context.lastClosed
      return operation(s) && closed != null ? [{ type: 'REVIEW.ANSWER', reviewId: closed.reviewId, verdict: readReviewAnswer(ANSWERS.approve), toldInResult: false }] : undefined
    },
    (ctx) => void ctx.twin.answerReview(AGENT, ctx.twin.oracle.lastClosedReview(AGENT)!.reviewId, ANSWERS.approve),
  )
  // R95: a headless policy closes the review open when it is called, as `answerReview` would
  // (approved, or dismissed, with `by: 'policy'`); with none open it resolves null and the chart
  // hears nothing. (Not `toldInResult`: each own outcome multiplies the recording vertices, and
  // R95's told policy approval is pinned by test/rules.headless.test.ts.)
  for (const policy of ['approve', 'stop'] as const) {
    const verdict = policy === 'approve' ? { outcome: 'approved', by: 'policy' } : { outcome: 'dismissed', by: 'policy' }
    add(
      `answerReviewByPolicy(${policy}) (R95)`,
      (s) => (operation(s) ? (awaiting(s) ? [{ type: 'REVIEW.ANSWER', reviewId: openId(s), verdict, toldInResult: false }] : []) : undefined),
      (ctx) => void ctx.twin.answerReviewByPolicy(AGENT, policy),
    )
  }

  add('detach', (s) => (lifecycle(s) === 'serving' ? [{ type: 'RELOAD' }] : undefined), (ctx) => {
    ctx.actor = ctx.twin.actor(AGENT)
    ctx.twin.detach(AGENT)
  })
  for (const info of chartDelays()) {
    add('close timeout expires', (s) => (lifecycle(s) === 'closing' ? [{ type: info.eventType }] : undefined), ({ twin }) =>
      twin.expireCloseTimeouts((ms) => vi.advanceTimersByTime(ms)),
    )
  }

  // The log's answers to the held appends. A `plan/review` that resolves has landed first: the
  // log reports it (the chart hears its own record), then `append` resolves.
  const modeAllowed = (s: PlanModeSnapshot, event: AnyEventObject) => allowed(s, event)
  for (const event of [{ type: 'PLAN_MODE.APPENDED' }, { type: 'PLAN_MODE.APPEND_FAILED', error: new Error('held append failed') }]) {
    add(
      event.type === 'PLAN_MODE.APPENDED' ? 'plan/mode append resolves' : 'plan/mode append fails',
      (s) => (modeAllowed(s, event) ? [event] : undefined),
      ({ twin }) => void (event.type === 'PLAN_MODE.APPENDED' ? twin.resolveHeld(AGENT, 'plan/mode') : twin.rejectHeld(AGENT, 'plan/mode')),
    )
  }
  add(
    'plan/review append resolves',
    (s) => {
      const review = s.context.review
      if (!hears(s) || review?.durable === undefined) return undefined
      if (requesting(s)) {
        const { reviewId, callId } = review.durable
        const request = { reviewId, title: review.title, plan: review.plan, version: 1, ...(callId === undefined ? {} : { callId }) }
        return [{ type: 'LOG.REVIEW_REQUESTED', review: request }, { type: 'REVIEW.RECORDED' }]
      }
      if (!isRecordingReview(s) || !review.result) return undefined
      const { outcome, feedback, toldInResult, by } = review.result
      const own = {
        type: 'LOG.REVIEW_CLOSED',
        reviewId: review.durable.reviewId,
        outcome,
        ...(feedback === undefined ? {} : { feedback }),
        toldInResult: toldInResult === true,
        ...(by === 'policy' ? { by } : {}),
      }
      return [own, { type: 'REVIEW.RECORDED' }]
    },
    ({ twin }) => twin.resolveHeld(AGENT, 'plan/review'),
  )
  add(
    'plan/review append fails',
    (s) => (hears(s) && (requesting(s) || isRecordingReview(s)) ? [{ type: 'REVIEW.RECORD_FAILED', error: new Error('held append failed') }] : undefined),
    ({ twin }) => void twin.rejectHeld(AGENT, 'plan/review'),
  )

  // The host's log events, as in the other configurations.
  for (const letter of logLetters()) {
    add(letter.label, (s) => (allowed(s, letter.event) ? [letter.event] : undefined), letter.replay)
  }

  // Another writer's records (R79, R80).
  add(
    'another writer requests a review',
    (s) =>
      hears(s) && !facts(s).appending
        ? [{ type: 'LOG.REVIEW_REQUESTED', review: { reviewId: graphId('other'), title: OTHER_TITLE, plan: OTHER_PLAN, version: 1 } }]
        : undefined,
    (ctx) => ctx.twin.hostAppend(AGENT, 'plan/review', { outcome: 'requested', reviewId: `other-${++ctx.others}`, title: OTHER_TITLE, plan: OTHER_PLAN }),
  )
  // R95: another process's headless policy (a CI job answering open reviews) approves: its record
  // carries `by: 'policy'`, so it races a user's approval in flight here (by is part of an outcome;
  // the other way round, a user's record racing this service's policy answer, is `another writer
  // approves` above). Its dismissal is left out: it adds about as many paths again (~1,000), and
  // its races differ from a user's approval in the outcome already, not in `by` alone.
  // R101: another process's user leaves plan mode, not told in the result: this service's next
  // boundary tells it (R81). It closes an awaiting review only (its races would be a
  // keep-planning's: another outcome than this service's record in flight).
  const closes: [string, 'approved' | 'keep-planning' | 'left', string | undefined, boolean, boolean][] = [
    ['approves', 'approved', undefined, false, false],
    ['approves, told in result', 'approved', undefined, true, false],
    ['keeps planning', 'keep-planning', OTHER_FEEDBACK, false, false],
    ['approves by policy (R95)', 'approved', undefined, false, true],
    ['leaves (R101)', 'left', undefined, false, false],
  ]
  for (const [name, outcome, feedback, toldInResult, policy] of closes) {
    const by = policy ? { by: 'policy' as const } : {}
    add(
      `another writer ${name}`,
      (s) => {
        if (!hears(s) || openId(s) === undefined) return undefined
        const own = isRecordingReview(s) ? s.context.review?.result : undefined
        if (!(awaiting(s) && !facts(s).appending) && !own) return undefined
        if (own && outcome === 'left') return undefined // another writer's leave closes an awaiting review only
        // R101: an own fresh approval or leave in flight races one record, the plain user's
        // approval told as it is: what only `fresh` tells apart, or an approval a leave loses to.
        // (Its races with the other records are an approval's or a keep-planning's, replayed above.)
        if (own && (own.fresh === true || own.outcome === 'left') && !(outcome === 'approved' && !policy && toldInResult === (own.toldInResult === true))) {
          return undefined
        }
        if (
          own &&
          own.outcome === outcome &&
          own.feedback === feedback &&
          (own.toldInResult === true) === toldInResult &&
          (own.by === 'policy') === policy &&
          own.fresh !== true // R101: no other writer approves into a fresh context here
        ) {
          return undefined
        }
        return [{ type: 'LOG.REVIEW_CLOSED', reviewId: openId(s), outcome, ...(feedback === undefined ? {} : { feedback }), toldInResult, ...by }]
      },
      (ctx) => {
        const { reviewId, title, plan } = openReview(ctx)
        const record = { outcome, reviewId, title, plan, ...(feedback === undefined ? {} : { feedback }), ...(toldInResult ? { toldInResult } : {}), ...by }
        ctx.twin.hostAppend(AGENT, 'plan/review', record)
      },
    )
  }
  return letters
}

/**
 * The channel or no-channel path of the letters so labelled, in order, with the state key after
 * each (for a test that replays one path by name); throws when a letter cannot happen where the
 * path is.
 */
export function tourPath(config: 'channel' | 'no-channel', labels: readonly string[]): ModelPath {
  const letters = alphabet(config === 'channel')
  let s = createActor(planModeMachine).getSnapshot() as PlanModeSnapshot
  const path: ModelPath = { letters: [], keys: [], config }
  for (const label of labels) {
    const letter = letters.find((l) => l.label === label)
    if (!letter || !allowed(s, letter.event)) throw new Error(`${label} cannot happen after ${path.letters.map((l) => l.label).join(' → ') || '(initial)'}`)
    s = transition(planModeMachine, s, letter.event as never)[0] as PlanModeSnapshot
    path.letters.push(letter)
    path.keys.push(stateKey(s))
  }
  return path
}

/**
 * The durable path of the letters so labelled, in order, with the state key after each (for a
 * test that replays one path by name); throws when a letter cannot happen where the path is.
 */
export function durablePath(labels: readonly string[]): ModelPath {
  const letters = durableAlphabet()
  let s = createActor(planModeMachine).getSnapshot() as PlanModeSnapshot
  const path: ModelPath = { letters: [], keys: [], config: 'durable' }
  for (const label of labels) {
    const letter = letters.find((l) => l.label === label)
    const events = letter?.eventsIn(s)
    if (!letter || !events) throw new Error(`${label} cannot happen after ${path.letters.map((l) => l.label).join(' → ') || '(initial)'}`)
    for (const event of events) s = transition(planModeMachine, s, event as never)[0] as PlanModeSnapshot
    path.letters.push(letter)
    path.keys.push(stateKey(s))
  }
  return path
}

/**
 * R64: adds to `coverage` the states and transitions attach takes (`RESTORE` from the initial
 * snapshot, as restore.ts sends it) for each log, with P as the log's kept selection and as a
 * pending store holding either target. Returns where the snapshot restore.ts makes (its value
 * chosen once per combination of what RESTORE's guards read) differs from that transition's.
 */
export function coverRestores(restores: Iterable<PlanLogRestore>, coverage: CoverageCollector): string[] {
  const step = inspectedTransition()
  // The initial snapshot as XState's pure `initialTransition` makes it, on one inert scope rather
  // than a new actor per call.
  const scope = inertScope(createActor(planModeMachine))
  const differ: string[] = []
  for (const fold of restores) {
    for (const pending of [fold.kept, true, false]) {
      const initial = planModeMachine.getInitialSnapshot(scope as never, { fold, ports: UNATTACHED_PORTS, closeTimeout: 1000 })
      const { next, states, transitions } = step(initial as PlanModeSnapshot, [{ type: 'RESTORE', fold, pending }])
      for (const state of states) coverage.states.add(state)
      for (const t of transitions) coverage.transitions.add(t)
      const restored = restoreSnapshot(fold, pending, UNATTACHED_PORTS, 1000) as unknown as { value: unknown; context: PlanModeSnapshot['context'] }
      if (!isDeepStrictEqual([restored.value, restored.context], [next.value, next.context])) {
        differ.push(`${JSON.stringify({ fold, pending })}: ${JSON.stringify(restored.value)} vs ${JSON.stringify(next.value)}`)
      }
    }
  }
  return differ
}

/** An actor scope for XState's `machine.transition` that executes nothing (the actions, deferred effects and children are dropped). */
function inertScope(self: ReturnType<typeof createActor<typeof planModeMachine>>) {
  return {
    self,
    defer: () => {},
    id: '',
    logger: () => {},
    sessionId: '',
    stopChild: () => {},
    system: self.system,
    emit: () => {},
    actionExecutor: () => {},
  }
}

/**
 * A transition function that also says which states and definition transitions each macrostep
 * took (the same keys as `CoverageCollector`): XState's pure `transition`, with an inspected
 * actor scope (nothing is executed).
 */
function inspectedTransition(): (s: PlanModeSnapshot, events: AnyEventObject[]) => { next: PlanModeSnapshot; states: Set<string>; transitions: Set<string> } {
  const self = createActor(planModeMachine)
  let taken = { states: new Set<string>(), transitions: new Set<string>() }
  self.system.inspect({ next: (event: InspectionEvent) => recordMicrostep(event, taken) })
  const scope = inertScope(self)
  return (s, events) => {
    taken = { states: new Set(), transitions: new Set() }
    let next = s
    for (const event of events) next = planModeMachine.transition(next, event as never, scope as never) as PlanModeSnapshot
    return { next, ...taken }
  }
}

/**
 * The durable configuration's graph is far larger than the others (its state key adds the
 * outcome to tell, the racing record, the answer in flight), so one path per edge would be tens
 * of thousands. Instead a breadth-first traversal keeps, of its edges, those that reach a
 * coverage target no earlier edge reached: a state or a definition transition (taken by the
 * macrostep, raised events and eventless transitions included), a vertex of the graph, a letter
 * in a configuration of the review region, a record's landing or failure or another writer's
 * record from a vertex whose own record is in flight, the close timeout from a closing vertex.
 * Walks through the graph take every kept edge (`coveringWalks`); the edges they pass on the way
 * are replayed too.
 */
function generateDurablePaths(): GeneratedPaths {
  const letters = durableAlphabet()
  const step = inspectedTransition()
  const covered = new Set<string>()
  const initial = createActor(planModeMachine).getSnapshot() as PlanModeSnapshot
  const initialKey = stateKey(initial)
  const vertices = new Map<string, { snapshot: PlanModeSnapshot; letters: Step[]; keys: string[] }>([
    [initialKey, { snapshot: initial, letters: [], keys: [] }],
  ])
  for (const node of initial._nodes) covered.add(`state ${node.id}`)
  const queue = [initialKey]
  const out = new Map<string, Edge[]>()
  const kept = new Set<Edge>()
  const invariantBreaks: ModelPath[] = []
  const closingTimeouts = new Map<string, string | undefined>()
  const reviewValue = (s: PlanModeSnapshot) => JSON.stringify((s.value as { review: unknown }).review)
  /** What a racing record's outcome depends on: the review (and the record in flight), F and P, the lifecycle. */
  const raceKey = (s: PlanModeSnapshot, key: string) => {
    const { mode, intent, review, lifecycle } = s.value as Record<string, unknown>
    const { value: _value, told: _told, ...rest } = JSON.parse(key) as Record<string, unknown>
    return JSON.stringify({ mode, intent, review, lifecycle, ...rest })
  }
  const racing = (letter: Step) => letter.label.startsWith('plan/review append') || letter.label.startsWith('another writer')
  const recordInFlight = (s: PlanModeSnapshot) =>
    facts(s).requesting || isRecordingReview(s)
  /**
   * R81, R101: what a boundary tells of an untold outcome depends on the outcome, F and P (the
   * state in force) and K, which the chart's transitions do not all tell apart: each combination
   * is a target of its own.
   */
  const boundaryTargets = (s: PlanModeSnapshot) => {
    const news = s.context.news
    if (news == null) return []
    const { mode, intent } = s.value as Record<string, unknown>
    return [`boundary telling ${news.outcome} under ${JSON.stringify({ mode, intent, told: s.context.told })}`]
  }
  let edges = 0
  for (let head = 0; head < queue.length; head++) {
    const key = queue[head]!
    const source = vertices.get(key)!
    const s = source.snapshot
    const { lifecycle } = facts(s)
    if (lifecycle === 'stopped') continue // the service stops the actor: nothing follows
    if (lifecycle === 'closing') closingTimeouts.set(key, undefined)
    // What the targets read of the source, once per vertex (not per letter).
    const review = reviewValue(s)
    const inFlight = recordInFlight(s)
    let race: string | undefined
    for (const letter of letters) {
      const events = letter.eventsIn(s)
      if (events === undefined) continue
      edges++
      const { next, states, transitions } = step(s, events)
      const nextKey = stateKey(next)
      // The path to the edge's target (the source's, one letter on), made only where it is kept.
      const path = (): ModelPath => ({ letters: [...source.letters, letter], keys: [...source.keys, nextKey], config: 'durable' })
      if ((next.value as { lifecycle: string }).lifecycle === 'stopped' && next.hasTag('appending')) {
        invariantBreaks.push(path())
        continue
      }
      if (letter.label === 'close timeout expires') closingTimeouts.set(key, nextKey)
      const edge: Edge = { letter, next: nextKey }
      if (out.has(key)) out.get(key)!.push(edge)
      else out.set(key, [edge])
      const targets = [
        ...[...states].map((id) => `state ${id}`),
        ...transitions,
        // Every vertex; each letter once in each configuration of the review region; every
        // record's landing or failure and every other writer's record out of a vertex whose own
        // record is in flight (a request, an answer, a supersede: where records race, R79, R80);
        // the close timeout from each closing vertex (R73).
        `vertex ${nextKey}`,
        `${letter.label} in review ${review}`,
        ...(inFlight && racing(letter) ? [`${letter.label} from ${(race ??= raceKey(s, key))}`] : []),
        ...(letter.label === 'close timeout expires' ? [`close timeout from ${key}`] : []),
        ...(letter.label.startsWith('stepBoundary') ? boundaryTargets(s) : []),
      ]
      if (targets.some((t) => !covered.has(t))) {
        for (const t of targets) covered.add(t)
        kept.add(edge)
      }
      if (!vertices.has(nextKey)) {
        const head = path()
        vertices.set(nextKey, { snapshot: next, letters: head.letters, keys: head.keys })
        queue.push(nextKey)
      }
    }
  }
  return { paths: coveringWalks('durable', initialKey, out, kept), vertices: vertices.size, edges, invariantBreaks, closingTimeouts }
}

// ---------------------------------------------------------------------------------------------
// Coverage of the definition

/** Every state node below the root, and every transition (by source, event, index), of the chart. */
export function chartDefinition(): { states: string[]; transitions: string[] } {
  const states: string[] = []
  const transitions: string[] = []
  const walk = (node: AnyStateNode) => {
    if (node !== planModeMachine.root) states.push(node.id)
    for (const [eventType, list] of node.transitions) list.forEach((_, i) => transitions.push(transitionKey(node.id, eventType, i)))
    node.always?.forEach((_, i) => transitions.push(transitionKey(node.id, 'always', i)))
    for (const child of Object.values(node.states)) walk(child)
  }
  walk(planModeMachine.root)
  return { states, transitions }
}

function transitionKey(source: string, eventType: string, index: number): string {
  return `${source} ${eventType} #${index}`
}

/** The key of each definition transition a microstep took, made once per transition (the definition's objects do not change). */
const transitionKeys = new WeakMap<object, string>()

/** Adds the states and the definition's transitions of a microstep (an inspection event) to `into`. */
function recordMicrostep(event: InspectionEvent, into: { states: Set<string>; transitions: Set<string> }): void {
  if (event.type !== '@xstate.microstep') return
  const snapshot = event.snapshot as PlanModeSnapshot
  if (snapshot.machine?.id !== 'planMode') return
  for (const node of snapshot._nodes) into.states.add(node.id)
  for (const t of event._transitions) {
    let key = transitionKeys.get(t)
    if (key === undefined) {
      const source = t.source
      const always = source.always?.indexOf(t as never) ?? -1
      key =
        always >= 0
          ? transitionKey(source.id, 'always', always)
          : transitionKey(source.id, t.eventType, source.transitions.get(t.eventType)!.indexOf(t as never))
      transitionKeys.set(t, key)
    }
    into.transitions.add(key)
  }
}


/** Collects the states and transitions the service's actors actually take (inspection). */
export class CoverageCollector {
  readonly states = new Set<string>()
  readonly transitions = new Set<string>()
  readonly observer: Observer<InspectionEvent> = { next: (event) => recordMicrostep(event, this) }

  /** Adds the states of a snapshot that was not reached by a microstep (an attach). */
  addSnapshot(snapshot: PlanModeSnapshot): void {
    for (const node of snapshot._nodes) if (node.id !== 'planMode') this.states.add(node.id)
  }
}

/**
 * Replays a path on a fresh twin (service with held appends + oracle) and checks, after every
 * step, the actor's state key against the graph's and everything observable against the oracle.
 * The replay runs under its own fake clock (`setTimeout`/`clearTimeout` only): a close timeout
 * fires when the path says (R73), and a path's actors left closing at its end never time out
 * during a later one (their clock goes with the path).
 */
export async function replayPath(path: ModelPath, coverage?: CoverageCollector): Promise<Twin> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
  try {
    const options: TwinOptions = {
      agents: [{ id: AGENT }],
      hasChannel: path.config === 'channel',
      ...(path.config === 'durable' ? { reviews: 'durable' as const } : {}),
      // R101: the channel's and the durable service's reviews offer every decision.
      ...(path.config === 'no-channel' ? {} : { decisions: MODEL_DECISIONS }),
      defaultFate: 'hold',
      closeTimeoutMs: CLOSE_TIMEOUT_MS,
      ...(coverage ? { inspect: coverage.observer } : {}),
    }
    const twin = new Twin(options)
    const ctx: ReplayContext = { twin, actor: twin.actor(AGENT), others: 0 }
    for (let i = 0; i < path.letters.length; i++) {
      const letter = path.letters[i]!
      letter.replay(ctx)
      await settle()
      const snapshot = ctx.actor.getSnapshot() as PlanModeSnapshot
      coverage?.addSnapshot(snapshot)
      const actual = stateKey(snapshot)
      if (actual !== path.keys[i]) {
        throw new Error(
          `the service left the modelled path at step ${i + 1} (${letter.label}):\n  actor: ${actual}\n  graph: ${path.keys[i]}\npath: ${pathName(path)}`,
        )
      }
      twin.check()
    }
    return twin
  } finally {
    vi.useRealTimers()
  }
}
