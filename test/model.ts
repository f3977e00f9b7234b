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
 * - the host's log events, while the actor serves; a `plan/mode` while the service's own
 *   `plan/mode` append is in flight is that append being published (then `PLAN_MODE.APPENDED`
 *   may follow; `PLAN_MODE.APPEND_FAILED` only before it was published), never a foreign one;
 * - the log's answers to the held appends and the channel's answers (all `xstate.done.actor`);
 * - the call's abort, and `RELOAD` (a detach) while the actor serves; after it only the work in
 *   flight may finish (`lifecycle.closing`), then the chart says `stopped` and the actor stops.
 *
 * The state key is the state value plus the context fields that guards read (K, the decided
 * review outcome, the deferred selection): all finite; never counters, results, ports or the log.
 * (The old "detached" flag is the `lifecycle` region of the value now.) Every edge of the
 * adjacency map becomes one path: the shortest path to its source, then the edge ("transition
 * tour"); paths that are prefixes of others are dropped.
 */
import type { AnyEventObject, AnyStateNode, InspectionEvent, Observer } from 'xstate'
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

/** The answers the channel gives in the model (R44, R45). */
export const ANSWERS = {
  approve: { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  keep: { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] },
  feedback: { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Use SQLite instead.' }] },
}
/** A dismissal: a rejection with code `ASK_CANCELLED` (R46). */
export const dismissal = () => Object.assign(new Error('the user closed the dialog'), { code: 'ASK_CANCELLED' })

/** What a step of a path does to the twin. */
interface ReplayContext {
  twin: Twin
  /** The open exit-tool call. */
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

/** The alphabet of one agent's world; `hasChannel` picks the service's configuration. */
export function alphabet(hasChannel: boolean): Letter[] {
  const letters: Letter[] = []
  const add = (label: string, event: AnyEventObject, replay: Letter['replay']) => letters.push({ label, event, replay })

  for (const active of [true, false]) {
    add(`set(${active})`, { type: 'SELECT', active }, ({ twin }) => void twin.set(AGENT, active))
  }
  add('stepBoundary', { type: 'STEP_BOUNDARY', aborted: false }, ({ twin }) => void twin.boundary(AGENT))
  add('stepBoundary(aborted)', { type: 'STEP_BOUNDARY', aborted: true }, ({ twin }) => void twin.boundary(AGENT, true))

  const open = (label: string, plan: string, problem: string | undefined, owned: boolean) =>
    add(
      label,
      { type: 'REVIEW.OPEN', plan, title: plan === NO_HEADING ? 'Plan' : PLAN_TITLE, problem, owned, hasChannel },
      (ctx) => {
        const call = ctx.twin.execute(AGENT, { plan }, { owned })
        if (!hasChannel || owned || problem) return
        ctx.reviewCall = call
      },
    )
  open('exit_plan_mode(plan)', PLAN, undefined, false)
  open('exit_plan_mode(no heading)', NO_HEADING, 'no-heading', false)
  open('exit_plan_mode(too large)', TOO_LARGE, 'too-large', false)
  open('exit_plan_mode(owned agent)', PLAN, undefined, true)

  const aborts: [string, unknown, string][] = [
    ['abort(Error)', new Error('stopped by the host'), 'stopped by the host'],
    ['abort(string reason)', 'user left', 'the plan review was aborted'],
    ['abort()', 'plain', 'This operation was aborted'],
  ]
  for (const [label, reason, message] of hasChannel ? aborts : []) {
    add(label, { type: 'REVIEW.ABORT', message }, (ctx) => ctx.twin.abort(ctx.reviewCall!, reason))
  }
  add('detach', { type: 'RELOAD' }, (ctx) => {
    ctx.actor = ctx.twin.actor(AGENT)
    ctx.twin.detach(AGENT)
  })
  if (hasChannel) add('(review settles)', { type: 'REVIEW.SETTLE' }, () => {})

  for (const info of chartInvokes()) {
    const done = `xstate.done.actor.${info.id}`
    const error = `xstate.error.actor.${info.id}`
    const where = info.stateId.replace(/^planMode\./, '')
    if (!hasChannel && info.src !== 'appendPlanMode') continue
    if (info.src === 'askReview') {
      for (const [name, answer] of Object.entries(ANSWERS)) {
        add(`answer ${name}`, { type: done, output: answer, actorId: info.id }, (ctx) =>
          ctx.twin.answer(ctx.twin.openAskIndex(AGENT)!, answer),
        )
      }
      add('dismiss review', { type: error, error: dismissal(), actorId: info.id }, (ctx) =>
        ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, dismissal()),
      )
      add('review channel fails', { type: error, error: new Error('the review UI crashed'), actorId: info.id }, (ctx) =>
        ctx.twin.rejectAsk(ctx.twin.openAskIndex(AGENT)!, new Error('the review UI crashed')),
      )
    } else {
      const type = info.src === 'recordReview' ? 'plan/review' : 'plan/mode'
      add(`${type} append resolves (${where})`, { type: done, output: { seq: 0, type, data: {} }, actorId: info.id }, ({ twin }) =>
        twin.resolveHeld(AGENT, type),
      )
      add(`${type} append fails (${where})`, { type: error, error: new Error('held append failed'), actorId: info.id }, ({ twin }) =>
        void twin.rejectHeld(AGENT, type),
      )
    }
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

/** Snapshots reached after a detach: only the work in flight may finish on them. */
const detached = new WeakSet<object>()

/** The finite state key (see the file comment). */
export function stateKey(snapshot: PlanModeSnapshot, withDetached = true): string {
  const { told, review, deferredSelection } = snapshot.context
  return JSON.stringify({
    value: snapshot.value,
    told,
    outcome: review?.settlement?.outcome ?? null,
    deferred: deferredSelection,
    ...(withDetached ? { detached: detached.has(snapshot) } : {}),
  })
}

/**
 * The real machine's own `transition`, marking the snapshots reached after a detach. A machine
 * returns the same snapshot object for an event it ignores, so a marked one is a copy.
 */
const graphLogic = {
  getInitialSnapshot: (scope: never, input: never) => planModeMachine.getInitialSnapshot(scope, input),
  transition(snapshot: PlanModeSnapshot, event: AnyEventObject, scope: never): PlanModeSnapshot {
    let next = planModeMachine.transition(snapshot, event as never, scope) as PlanModeSnapshot
    if (event.type === 'RELOAD' || detached.has(snapshot)) {
      if (next === snapshot) next = { ...next }
      detached.add(next)
    }
    return next
  },
}

/** The target of the intent's append in flight, if any. */
function appendTarget(s: PlanModeSnapshot): boolean | undefined {
  // An idle selection commits from `logged` (committing.*) or against a pending opposite
  // target that someone else logged meanwhile (pending.*.committing, R10).
  const entering = [{ intent: { committing: 'entering' } }, { intent: { pending: { entering: 'flushing' } } }, { intent: { pending: { leaving: 'committing' } } }]
  const leaving = [{ intent: { committing: 'leaving' } }, { intent: { pending: { leaving: 'flushing' } } }, { intent: { pending: { entering: 'committing' } } }]
  if (entering.some((value) => s.matches(value as never))) return true
  if (leaving.some((value) => s.matches(value as never))) return false
  return undefined
}

/** What the service lets happen in `s` (see the file comment). */
function allowed(s: PlanModeSnapshot, event: AnyEventObject): boolean {
  const can = (e: AnyEventObject) => s.can(e as never)
  const appending = s.hasTag('appending')
  const isDetached = detached.has(s)
  const answered = s.matches({ review: { open: { unsettled: 'answered' } } })
  const unsettled = s.matches({ review: { open: 'unsettled' } })
  const recording = s.matches({ review: { open: 'recording' } })
  const target = appendTarget(s)
  const F = s.matches({ mode: 'active' })
  const type = event.type
  if (type.startsWith('xstate.done.actor.') || type.startsWith('xstate.error.actor.')) {
    if (!can(event)) return false
    if (type.includes('.intent.')) return type.startsWith('xstate.done.') ? F === target : F !== target
    return true
  }
  if (type === 'LOG.PLAN_MODE' && target !== undefined) return event.active === target && F !== target
  if (isDetached) return false
  if (answered && !appending) return type === 'REVIEW.SETTLE'
  switch (type) {
    case 'REVIEW.SETTLE':
      return false
    case 'SELECT':
    case 'STEP_BOUNDARY':
    case 'REVIEW.OPEN':
      return !appending && can(event)
    case 'RELOAD':
      return !recording && (unsettled || target !== undefined)
    default:
      return can(event)
  }
}

/** A generated path: the letters to replay and the state key expected after each. */
export interface ModelPath {
  letters: Letter[]
  /** The state key after each letter; null where the service moves on by itself (an answered review settles at once). */
  keys: (string | null)[]
  hasChannel: boolean
}

/** The service settles an answered review by itself when nothing is appending (SPEC §1). */
function settlesAtOnce(s: PlanModeSnapshot): boolean {
  return s.matches({ review: { open: { unsettled: 'answered' } } }) && !s.hasTag('appending')
}

function expectedKey(s: PlanModeSnapshot): string | null {
  return settlesAtOnce(s) ? null : stateKey(s, false)
}

/** Generates the transition tour of one configuration. */
export function generatePaths(hasChannel: boolean): { paths: ModelPath[]; vertices: number; edges: number } {
  const letters = alphabet(hasChannel)
  const byEvent = new Map(letters.map((l) => [l.event, l]))
  const events = letters.map((l) => l.event)
  const options = {
    events,
    filterEvents: (s: PlanModeSnapshot, e: AnyEventObject) => allowed(s, e),
    serializeState: (snapshot: PlanModeSnapshot) => stateKey(snapshot),
    serializeEvent: (e: AnyEventObject) => byEvent.get(e)?.label ?? JSON.stringify(e),
  }
  const adjacency = getAdjacencyMap(graphLogic as never, options as never) as unknown as Record<
    string,
    { state: PlanModeSnapshot; transitions: Record<string, { event: AnyEventObject; state: PlanModeSnapshot }> }
  >
  const shortest = getShortestPaths(graphLogic as never, options as never) as unknown as {
    state: PlanModeSnapshot
    steps: { event: AnyEventObject; state: PlanModeSnapshot }[]
  }[]
  const heads = new Map<string, { letters: Letter[]; keys: (string | null)[] }>()
  for (const path of shortest) {
    const steps = path.steps.filter((step) => step.event.type !== 'xstate.init')
    heads.set(stateKey(path.state), {
      letters: steps.map((step) => byEvent.get(step.event)!),
      keys: steps.map((step) => expectedKey(step.state)),
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
        keys: [...head.keys, expectedKey(state)],
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
  return { paths, vertices: Object.keys(adjacency).length, edges }
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
 */
export async function replayPath(path: ModelPath, coverage?: CoverageCollector): Promise<Twin> {
  const options: TwinOptions = {
    agents: [{ id: AGENT }],
    hasChannel: path.hasChannel,
    defaultFate: 'hold',
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
    const actual = stateKey(snapshot, false)
    if (path.keys[i] !== null && actual !== path.keys[i]) {
      throw new Error(
        `the service left the modelled path at step ${i + 1} (${letter.label}):\n  actor: ${actual}\n  graph: ${path.keys[i]}\npath: ${pathName(path)}`,
      )
    }
    twin.check()
  }
  return twin
}
