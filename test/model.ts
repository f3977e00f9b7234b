/**
 * Paths of the plan-mode statechart, generated with `xstate/graph` from the real machine, and
 * their replay on the real service against the oracle (test/model.test.ts runs them).
 *
 * The chart's appends are entry actions whose completions come back as events
 * (`PLAN_MODE.APPENDED`, ...); its one invoked actor is the review question (`askReview`), which
 * resolves with the review's result and never rejects. `createTestModel` refuses a machine that
 * invokes, so the plain traversal helpers (`getAdjacencyMap`, `getShortestPaths`) take it, with
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
 *   with the review's result, as `askReview` computes it);
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
 * review outcome, the deferred selection): all finite; never counters, results, ports or the log.
 * (The old "detached" flag is the `lifecycle` region of the value now.) Every edge of the
 * adjacency map becomes one path: the shortest path to its source, then the edge ("transition
 * tour"); paths that are prefixes of others are dropped.
 */
import { vi } from 'vitest'
import { transition, type AnyEventObject, type AnyStateNode, type InspectionEvent, type Observer } from 'xstate'
import { getAdjacencyMap, getShortestPaths } from 'xstate/graph'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import type { ReviewResult } from '../src/machines/planMode.events.js'
import type { PlanModeSnapshot } from '../src/machines/planMode.view.js'
import { REVIEW_MESSAGES, keepPlanningMessage } from '../src/plan/review.js'
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
/** A dismissal: a rejection with code `ASK_CANCELLED` (R46). */
export const dismissal = () => Object.assign(new Error('the user closed the dialog'), { code: 'ASK_CANCELLED' })
const CHANNEL_FAILURE = 'the review UI crashed'

/** What the ask effect resolves with for each answer (see `askReview`, R44–R46). */
const REVIEW_OUTPUTS: Record<keyof typeof ANSWERS, ReviewResult> = {
  approve: { outcome: 'approved' },
  keep: { outcome: 'keep-planning', error: keepPlanningMessage(undefined) },
  feedback: { outcome: 'keep-planning', error: keepPlanningMessage(FEEDBACK), feedback: FEEDBACK },
}

/** What a step of a path does to the twin. */
interface ReplayContext {
  twin: Twin
  /** The exit-tool call whose review is open (the one an abort aborts). */
  reviewCall?: ReturnType<Twin['execute']>
  /** The actor the path runs on (kept across a detach, whose work finishes on it). */
  actor: ReturnType<Twin['actor']>
}

/** One event of the alphabet: the machine event, its label, and how the service is made to see it. */
export interface Letter {
  label: string
  event: AnyEventObject
  replay(ctx: ReplayContext): void
}

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
    add('review channel fails', done({ outcome: 'failed', error: CHANNEL_FAILURE }), (ctx) =>
      ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, new Error(CHANNEL_FAILURE)),
    )
  }
  return [...letters, ...logLetters()]
}

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

/** The finite state key (see the file comment): only what the chart's guards read. */
export function stateKey(snapshot: PlanModeSnapshot): string {
  const { told, review, deferredSelection } = snapshot.context
  return JSON.stringify({
    value: snapshot.value,
    told,
    outcome: review?.result?.outcome ?? null,
    deferred: deferredSelection,
  })
}

/** The `plan/mode` target of the intent's append in flight, if any. */
function appendTarget(s: PlanModeSnapshot): boolean | undefined {
  // An idle selection commits from `logged` (committing.*) or against a pending opposite
  // target that someone else logged meanwhile (pending.*.committing appends the other one, R10);
  // a boundary flushes P (pending.*.flushing).
  const entering = [{ intent: { committing: 'entering' } }, { intent: { pending: { entering: 'flushing' } } }, { intent: { pending: { leaving: 'committing' } } }]
  const leaving = [{ intent: { committing: 'leaving' } }, { intent: { pending: { leaving: 'flushing' } } }, { intent: { pending: { entering: 'committing' } } }]
  if (entering.some((value) => s.matches(value as never))) return true
  if (leaving.some((value) => s.matches(value as never))) return false
  return undefined
}

/** What the service lets happen in `s` (see the file comment). */
function allowed(s: PlanModeSnapshot, event: AnyEventObject): boolean {
  const can = (e: AnyEventObject) => s.can(e as never)
  const serving = s.matches({ lifecycle: 'serving' })
  const target = appendTarget(s)
  const F = s.matches({ mode: 'active' })
  switch (event.type) {
    // The work in flight may land even after a detach. Every intent append starts with F ≠ its
    // target, so F = target says it was published: it may resolve, no longer fail.
    case 'PLAN_MODE.APPENDED':
      return target !== undefined && F === target
    case 'PLAN_MODE.APPEND_FAILED':
      return target !== undefined && F !== target
    case 'REVIEW.RECORDED':
    case 'REVIEW.RECORD_FAILED':
      return s.matches({ review: { open: 'recording' } })
    case 'LOG.PLAN_MODE':
      if (target !== undefined) return event.active === target && F !== target
  }
  // R73: a closing actor's wait for its work in flight may run out (and only a closing actor's).
  if (isCloseTimeout(event)) return s.matches({ lifecycle: 'closing' })
  // A detached actor only finishes its work, still hearing the log until it stops; the next
  // call attaches a new one.
  if (!serving) return s.matches({ lifecycle: 'closing' }) && event.type.startsWith('LOG.') && can(event)
  switch (event.type) {
    case 'SELECT':
    case 'STEP_BOUNDARY':
    case 'REVIEW.OPEN':
      return !s.hasTag('appending')
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
function stopsWithWorkInFlight(s: PlanModeSnapshot, event: AnyEventObject): PlanModeSnapshot | undefined {
  if (s.matches({ lifecycle: 'stopped' })) return undefined
  const [next] = transition(planModeMachine, s, event as never)
  return next.matches({ lifecycle: 'stopped' }) && next.hasTag('appending') ? next : undefined
}

/** A generated path: the letters to replay and the state key expected after each. */
export interface ModelPath {
  letters: Letter[]
  /** The state key after each letter. */
  keys: string[]
  hasChannel: boolean
}

/** Generates the transition tour of one configuration. */
export function generatePaths(hasChannel: boolean): {
  paths: ModelPath[]
  vertices: number
  edges: number
  /** Paths ending in an edge that breaks `stopsWithWorkInFlight` (left out of the graph). */
  invariantBreaks: ModelPath[]
} {
  const letters = alphabet(hasChannel)
  const byEvent = new Map(letters.map((l) => [l.event, l]))
  const events = letters.map((l) => l.event)
  const breaks = new Map<string, { source: string; letter: Letter; next: string }>()
  const options = {
    events,
    filterEvents: (s: PlanModeSnapshot, e: AnyEventObject) => {
      if (!allowed(s, e)) return false
      const broken = stopsWithWorkInFlight(s, e)
      if (!broken) return true
      const letter = byEvent.get(e)!
      breaks.set(`${stateKey(s)} ${letter.label}`, { source: stateKey(s), letter, next: stateKey(broken) })
      return false
    },
    serializeState: (snapshot: PlanModeSnapshot) => stateKey(snapshot),
    serializeEvent: (e: AnyEventObject) => byEvent.get(e)?.label ?? JSON.stringify(e),
  }
  const adjacency = getAdjacencyMap(planModeMachine, options as never) as unknown as Record<
    string,
    { state: PlanModeSnapshot; transitions: Record<string, { event: AnyEventObject; state: PlanModeSnapshot }> }
  >
  const shortest = getShortestPaths(planModeMachine, options as never) as unknown as {
    state: PlanModeSnapshot
    steps: { event: AnyEventObject; state: PlanModeSnapshot }[]
  }[]
  const heads = new Map<string, { letters: Letter[]; keys: string[] }>()
  for (const path of shortest) {
    const steps = path.steps.filter((step) => step.event.type !== 'xstate.init')
    heads.set(stateKey(path.state), {
      letters: steps.map((step) => byEvent.get(step.event)!),
      keys: steps.map((step) => stateKey(step.state)),
    })
  }
  const all: ModelPath[] = []
  let edges = 0
  for (const [key, { transitions }] of Object.entries(adjacency)) {
    const head = heads.get(key)
    if (!head) throw new Error(`no shortest path to ${key}`)
    for (const { event, state } of Object.values(transitions)) {
      edges++
      all.push({
        letters: [...head.letters, byEvent.get(event)!],
        keys: [...head.keys, stateKey(state)],
        hasChannel,
      })
    }
  }
  // Drop the paths that are prefixes of others.
  const name = (p: ModelPath, n = p.letters.length) => p.letters.slice(0, n).map((l) => l.label).join(' → ')
  const prefixes = new Set<string>()
  for (const p of all) for (let n = 1; n < p.letters.length; n++) prefixes.add(name(p, n))
  const seen = new Set<string>()
  const paths = all.filter((p) => {
    const n = name(p)
    if (prefixes.has(n) || seen.has(n)) return false
    seen.add(n)
    return true
  })
  const invariantBreaks = [...breaks.values()].map(({ source, letter, next }) => {
    const head = heads.get(source)!
    return { letters: [...head.letters, letter], keys: [...head.keys, next], hasChannel }
  })
  return { paths, vertices: Object.keys(adjacency).length, edges, invariantBreaks }
}

/** A path's name: its letters. */
export function pathName(path: ModelPath): string {
  const name = path.letters.map((l) => l.label).join(' → ') || '(initial)'
  return path.hasChannel ? name : `[no review channel] ${name}`
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

/** Collects the states and transitions the service's actors actually take (inspection). */
export class CoverageCollector {
  readonly states = new Set<string>()
  readonly transitions = new Set<string>()
  readonly observer: Observer<InspectionEvent> = {
    next: (event) => {
      if (event.type !== '@xstate.microstep') return
      const snapshot = event.snapshot as PlanModeSnapshot
      if (snapshot.machine?.id !== 'planMode') return
      for (const node of snapshot._nodes) this.states.add(node.id)
      for (const t of event._transitions) {
        const source = t.source
        const always = source.always?.indexOf(t as never) ?? -1
        this.transitions.add(
          always >= 0
            ? transitionKey(source.id, 'always', always)
            : transitionKey(source.id, t.eventType, source.transitions.get(t.eventType)!.indexOf(t as never)),
        )
      }
    },
  }

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
      hasChannel: path.hasChannel,
      defaultFate: 'hold',
      closeTimeoutMs: CLOSE_TIMEOUT_MS,
      ...(coverage ? { inspect: coverage.observer } : {}),
    }
    const twin = new Twin(options)
    const ctx: ReplayContext = { twin, actor: twin.actor(AGENT) }
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
