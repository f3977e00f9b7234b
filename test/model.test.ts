import { isDeepStrictEqual } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createActor } from 'xstate'
import { createMemorySessionLog, planProjection, replayFromCheckpoint, replayPlanLog, type SessionEvent, type SessionLog } from '../src/index.js'
import { readCheckpoint } from '../src/log/checkpoint.js'
import { approvedPlanOf, createCheckpoint, restoreSession } from '../src/log/checkpoint.js'
import { foldViolations } from '../src/log/violations.js'
import { UNATTACHED_PORTS } from '../src/machines/planMode.effects.js'
import { restoreSnapshot } from '../src/machines/planMode.restore.js'
import { createPlanHistory, episodeBefore, planHistory } from '../src/log/history.js'
import { restorePlanLog } from '../src/log/kinds.js'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import { dueHandoff } from '../src/plan/handoff.js'
import { TEXT } from './oracle.js'
import { AGENT, CoverageCollector, chartDefinition, coverRestores, durablePath, generatePaths, pathName, replayPath, tourPath, type ModelPath } from './model.js'

/**
 * Model-based tests: every edge of the plan-mode statechart's reachable graph (as the service
 * can drive it) in the channel and no-channel configurations, and the edges of the durable
 * reviews' graph (R78–R81) that reach what no earlier edge reached, chained into walks (each a
 * path from a fresh service, named by its letters where it fails), replayed on the real service
 * and checked against the SPEC oracle after every step; then the coverage of the chart's
 * definition by those replays. Headless review policies (R94, R95) are letters of the channel
 * (a policy's approval and dismissal) and durable (`answerReviewByPolicy`, another writer's policy
 * approval) alphabets. The channel's and the durable service's reviews offer every decision
 * (R101): an approval into a fresh context and a leave are letters of both (`answerReview`
 * told in the result and not; another writer's leave). Edges where the chart stops with an append in flight are not
 * replayable (the service stops the actor under the work): they are left out of the graph and
 * fail a test of their own.
 */

/**
 * Transitions of the definition that no path through the service can take, with the reason.
 * Keyed like `chartDefinition()` (`<source state id> <event> #<index>`).
 */
export const UNREACHABLE: Readonly<Record<string, string>> = {
  // R79: the durable alphabet lets another writer request a review only while nothing is being
  // appended; the race of its request with ours, ours failing, is properties.test.ts's
  // "R79, R80: two services on one log: a request another process logged while ours was being
  // appended is the open review here when ours fails".
  'planMode.review.open.requesting REVIEW.RECORD_FAILED #0': "another process's request heard while ours is being appended",
  // R79, R80, R48: the same race while our record of the review is in flight (another process
  // closed it first and requested the next one); rules.durable.test.ts's "R79, R80: a request
  // another process logs while this one records a losing answer …" and "R48, R79: a request
  // another process logs while this one records the review a user's switch superseded …".
  'planMode.review.open.answering LOG.REVIEW_REQUESTED #0': "another process's request heard while our answer's record is being appended",
  'planMode.review.open.recorded always #0': 'a told approval concludes with a request heard meanwhile',
  'planMode.review.open.recorded always #2': 'an approval concludes with a request heard meanwhile',
  'planMode.review.open.recorded always #4': 'a review concludes with a request heard meanwhile',
  'planMode.review.open.superseded.entering.recording LOG.REVIEW_REQUESTED #0': "another process's request heard while a superseded record is being appended",
  'planMode.review.open.superseded.leaving.recording LOG.REVIEW_REQUESTED #0': "another process's request heard while a superseded record is being appended",
  // R79, R80: our answer's record lands (`lost`) or fails (`answerFailed`) after another process's
  // record closed the review and its request of the next one was heard; rules.races.test.ts takes
  // each: "R79, R80, R47, R81: another process's approval told in the result outran our
  // keep-planning, …" (#0), "… approval, not told in the result, …" (#2), "R79, R80, R81: another
  // process's keep-planning outran our approval, …" (#4; lost #4 also rules.durable.test.ts's
  // "R79, R80: a request another process logs while this one records a losing answer …"), in its
  // describes "… lands after …" (`lost`) and "… fails after …" (`answerFailed`, titles with R84).
  'planMode.review.open.lost always #0': 'a told approval that outran our answer concludes with a request heard meanwhile',
  'planMode.review.open.lost always #2': 'an approval that outran our answer concludes with a request heard meanwhile',
  'planMode.review.open.lost always #4': 'a review another record closed first concludes with a request heard meanwhile',
  'planMode.review.open.answerFailed always #0': 'a told approval that outlived our failed answer concludes with a request heard meanwhile',
  'planMode.review.open.answerFailed always #2': 'an approval that outlived our failed answer concludes with a request heard meanwhile',
  'planMode.review.open.answerFailed always #4': 'a review another record closed before our answer failed concludes with a request heard meanwhile',
  // R80, R81, R16, R30: a plan/mode or a request header the log reports after a record identical
  // to ours closed the review, ours still in flight; the alphabet hears no record identical to ours
  // before ours settles. rules.races.test.ts's "R80, R47, R16, R30: another process's approval told
  // in the result, identical to ours, …" (the answer's) and "R80, R48, R81: the user's switch into
  // (out of) plan mode in another process superseded the review first with the record ours
  // repeats, …" (the supersede's) take them.
  ...Object.fromEntries(
    ['answering', 'superseded.entering.recording', 'superseded.leaving.recording'].flatMap((state) =>
      ['LOG.PLAN_MODE', 'LOG.REQUEST_HEADER'].map((event) => [
        `planMode.review.open.${state}.logged ${event} #0`,
        'the log reports it after a record identical to ours closed the review, ours in flight',
      ]),
    ),
  ),
  'planMode.review.open.superseded.entering.recorded always #0': 'a superseded review concludes with a request heard meanwhile',
  'planMode.review.open.superseded.entering.lost always #2': 'a review another record closed first concludes with a request heard meanwhile',
  'planMode.review.open.superseded.leaving.lost always #2': 'a review another record closed first concludes with a request heard meanwhile',
  'planMode.review.open.superseded.leaving.recorded always #0': 'a superseded review concludes with a request heard meanwhile',
  'planMode.review.following LOG.REVIEW_REQUESTED #0': 'the heard request waits behind the switch that closed the review',
  // R3, R16, R73: an append a close abandoned lands P's target while the boundary's flush of P is
  // in flight, and the flush fails; the alphabet lands no abandoned append mid-flush.
  // properties.test.ts's "R3, R16, R73: a flush that fails after an abandoned append logged its
  // target" takes each (an entry and a leave, with no heard /plan, a heard /plan and /plan off).
  ...Object.fromEntries(
    ['entering', 'leaving'].flatMap((p) =>
      ['', '.runWaits.entering', '.runWaits.leaving'].map((w) => [
        `planMode.intent.pending.${p}.flushing${w} PLAN_MODE.APPEND_FAILED #0`,
        "the flush fails after an abandoned append logged P's target",
      ]),
    ),
  ),
}

const withChannel = generatePaths('channel')
const withoutChannel = generatePaths('no-channel')
const durable = generatePaths('durable')
const paths: ModelPath[] = [...withChannel.paths, ...withoutChannel.paths, ...durable.paths]
const coverage = new CoverageCollector()
let replayed = 0
/** The distinct logs the replays left (type and data of each event), by their JSON. */
const logs = new Map<string, { type: string; data: unknown }[]>()

/** Keeps the log a replay left, for the readers' check (R76). */
function keepLog(events: readonly SessionEvent[]): void {
  const log = events.map(({ type, data }) => ({ type, data }))
  logs.set(JSON.stringify(log), log)
  // The same log with a guard's telemetry in its middle (R90): the violations' reader counts it,
  // every other reader ignores it (R70); and a request at its end, which tells what the log left
  // untold (R30, R81) and lets a checkpoint follow a fresh approval (R102: none is made before).
  const middle = Math.floor(log.length / 2)
  const violation = { type: 'plan/violation', data: { tool: 'write_file', callId: 'c-guard', action: 'blocked' } }
  const guarded = [...log.slice(0, middle), violation, ...log.slice(middle), { type: 'request/header', data: { model: 'm' } }]
  logs.set(JSON.stringify(guarded), guarded)
}

/**
 * Everything the log's readers say of a session (R64, R76, R79, R81, R96, R98, R102): the replay's
 * fold, what attach restores (F, the kept selection and so P, the open turn, K, the open review,
 * the untold outcome), the approved plan (as `approvedPlan` reads it), the due handoff, the plan
 * history from where the session's events begin and the version the next plan gets, the
 * violations (R92) of those events, the chart's snapshot attach restores from the fold, and the
 * projection (R58, R80: a lost answer's approval or leave changes it no more than attach).
 */
function readers(session: SessionLog, fold: unknown, projection: unknown) {
  const warn = (message: string, error: unknown) => {
    throw new Error(`${message}: ${String(error)}`)
  }
  const start = episodeBefore(session)
  const history = createPlanHistory(start)
  for (const event of session.events) history.read(event)
  const approved = approvedPlanOf(session, AGENT)
  const { restore } = restoreSession(session, AGENT, warn)
  return {
    fold,
    restore,
    chart: restoreSnapshot(restore, null, UNATTACHED_PORTS, 1000),
    violations: foldViolations(session.events),
    approved,
    handoff: dueHandoff(session.events, approved, start),
    plans: history.plans,
    next: history.next(),
    projection,
  }
}

/**
 * R76: the readers of a checkpoint made after the first `k` events (as the service makes it, then
 * through a store's JSON) and the events a loader loads with it (its own event and those after it),
 * against the same readers of the whole log. Returns, for a cut `k`, the difference, undefined when
 * there is none, or null where no checkpoint is made (a handoff due, a review open since before the
 * episode). The whole log's readers do not depend on the cut: they are read once per log.
 *
 * `made[k]` is the checkpoint's JSON after the first `k` events (null: none is made), made here
 * when absent: a caller that reads logs beginning with the same events passes the same array,
 * cut back to what they share, and each checkpoint is made once. Each cut parses its own copy.
 */
function checkpointCuts(log: readonly { type: string; data: unknown }[], made: (string | null)[] = []): (k: number) => string | undefined | null {
  const whole = createMemorySessionLog(log)
  const events = whole.events
  const full = readers(whole, replayPlanLog(events), events.reduce(planProjection.apply, planProjection.init()))
  return (k) => {
    if (made[k] === undefined) {
      const checkpoint = createCheckpoint(AGENT, replayPlanLog(events.slice(0, k)), events.slice(0, k))
      made[k] = checkpoint === null ? null : JSON.stringify(checkpoint)
    }
    const json = made[k]
    if (json === null) return null
    const checkpoint = JSON.parse(json) as unknown
    let tail: SessionLog
    let restored: unknown
    try {
      tail = createMemorySessionLog(log.slice(k - 1), { checkpoint, agentId: AGENT })
      const read = readCheckpoint(checkpoint, AGENT)
      restored = 'problem' in read ? read : replayFromCheckpoint(tail.events, read)
    } catch (error) {
      return `the checkpoint after ${k} events cannot be loaded: ${(error as Error).message}`
    }
    const after = tail.events.filter((event) => event.seq > k)
    const fromTail = readers(tail, restored, after.reduce(planProjection.apply, (checkpoint as { projection: never }).projection))
    // The tail's history lists the plans presented after the checkpoint (all of them when the
    // loaded events start at seq 1: the whole log, read whole).
    // Violations are not carried by a checkpoint (telemetry, R70): the tail's are those of the events loaded.
    const begin = tail.events[0]?.seq === 1 ? 0 : k
    const expected = { ...full, plans: full.plans.filter((plan) => plan.seq > begin), violations: foldViolations(events.slice(tail.events[0]!.seq - 1)) }
    for (const key of Object.keys(expected) as (keyof typeof expected)[]) {
      if (!isDeepStrictEqual(fromTail[key], expected[key])) {
        return `${key} from the checkpoint after ${k} events and the tail:\n  ${JSON.stringify(fromTail[key])}\nfrom the whole log:\n  ${JSON.stringify(expected[key])}`
      }
    }
    return undefined
  }
}

/** `npm run test:deep` (`PLAN_MODE_DEEP=1`) reads R76's checkpoint at every cut of every log; `npm test` at {@link someCuts}. */
const EVERY_CUT = process.env.PLAN_MODE_DEEP === '1'
/** `npm test` reads every `CUT_STRIDE`-th cut of a log (and the cuts {@link someCuts} adds). */
const CUT_STRIDE = 3

/**
 * The kind of a log's event, for R76's cuts in `npm test`: its type and what tells its meaning
 * apart (a review record's outcome and how it was decided and told, a switch's target, a
 * command's result): every boolean of its data, and its `outcome`, `kind` and `by`.
 */
function eventKind({ type, data }: { type: string; data: unknown }): string {
  const fields = Object.entries((data ?? {}) as Record<string, unknown>).filter(
    ([key, value]) => typeof value === 'boolean' || key === 'outcome' || key === 'kind' || key === 'by',
  )
  return JSON.stringify([type, fields.sort(([a], [b]) => (a < b ? -1 : 1))])
}

/**
 * The kind of the cut after `k` events: the kinds ({@link eventKind}) of the event the
 * checkpoint ends at and of the first event after it (none at the log's end).
 */
function cutKind(log: readonly { type: string; data: unknown }[], k: number): string {
  return `${eventKind(log[k - 1]!)} ${k < log.length ? eventKind(log[k]!) : 'end'}`
}

/**
 * The cuts `npm test` reads the `index`-th log's checkpoint at (R76): every {@link CUT_STRIDE}-th,
 * from an offset that moves on with each log (logs that begin with the same events are read one
 * after another: together they take every cut of what they share), the last, and each cut of a
 * kind ({@link cutKind}) no log read before (`kinds`, which it adds to). So every log, and every
 * kind of cut any log has, is read; the deep run reads every cut.
 */
function someCuts(log: readonly { type: string; data: unknown }[], index: number, kinds: Set<string>): number[] {
  const cuts: number[] = []
  for (let k = 1; k <= log.length; k++) {
    const kind = cutKind(log, k)
    if ((k + index) % CUT_STRIDE === 0 || k === log.length || !kinds.has(kind)) {
      kinds.add(kind)
      cuts.push(k)
    }
  }
  return cuts
}

/** {@link checkpointCuts} of one cut. */
function checkpointReadersDiffer(log: readonly { type: string; data: unknown }[], k: number): string | undefined | null {
  return checkpointCuts(log)(k)
}

describe('R1–R64, R78–R81, R94, R95, R101 model-based: paths of the statechart replayed on the service against the oracle', () => {
  /** Whether some generated path of `config` holds the letters `labels` one after another. */
  const runs = (config: ModelPath['config'], ...labels: string[]) =>
    paths.some((path) => {
      if (path.config !== config) return false
      const names = path.letters.map((letter) => letter.label)
      return names.some((_, i) => labels.every((label, j) => names[i + j] === label))
    })
  const lands = 'plan/review append resolves'

  /**
   * The paths, replayed a chunk of `PATHS_PER_TEST` per test: one test per path cost vitest's
   * bookkeeping (~0.8 ms of CPU each, worker and main: 32.6/34.6 s vs 26.4/30.0 s for the file with
   * the paths in one test). A chunk replays each of its paths, and fails naming every one that failed.
   */
  const PATHS_PER_TEST = 250
  const chunks = [withChannel, withoutChannel, durable].flatMap(({ paths: all }) =>
    Array.from({ length: Math.ceil(all.length / PATHS_PER_TEST) }, (_, c) => {
      const from = c * PATHS_PER_TEST
      const chunk = all.slice(from, from + PATHS_PER_TEST)
      return [`${all[0]!.config} paths ${from + 1}–${from + chunk.length} of ${all.length}`, from, chunk] as const
    }),
  )
  it.each(chunks)('%s: replayed on the service against the oracle', async (_title, from, chunk) => {
    const failures: string[] = []
    for (const [i, path] of chunk.entries()) {
      replayed++
      try {
        keepLog((await replayPath(path, coverage)).log(AGENT).events)
      } catch (error) {
        failures.push(`path ${from + i + 1}: ${pathName(path)}\n  ${(error as Error).message}`)
      }
    }
    expect(failures).toEqual([])
  })

  it(`R76, R64, R96, R98, R102: every reader of a checkpoint ${EVERY_CUT ? 'at every cut' : `at every kind of cut and one cut in ${CUT_STRIDE}`} of every log the paths made, and the events after it, says what it says of the whole log`, async () => {
    // Run on its own (a name filter), it replays the paths itself.
    if (replayed === 0) for (const path of paths) keepLog((await replayPath(path).catch(() => undefined))?.log(AGENT).events ?? [])
    const failures: string[] = []
    let cuts = 0
    let checked = 0
    // In the order of their JSON, logs that begin with the same events are next to each other
    // (an event's JSON closes itself): the checkpoints after the events a log shares with the one
    // before it are those already made (and, in npm test, read at other cuts: \`someCuts\`).
    const ordered = [...logs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, log]) => log)
    const made: (string | null)[] = []
    let before: string[] = []
    let reused = 0
    let index = 0
    /** The kinds of cut read so far (`someCuts`). */
    const kinds = new Set<string>()
    for (const log of ordered) {
      const events = log.map((event) => JSON.stringify(event))
      let shared = 0
      while (shared < events.length && events[shared] === before[shared]) shared++
      made.length = Math.min(made.length, shared + 1)
      before = events
      const cut = checkpointCuts(log, made)
      for (const k of EVERY_CUT ? log.map((_, i) => i + 1) : someCuts(log, index++, kinds)) {
        cuts++
        if (made[k] !== undefined) reused++
        const problem = cut(k)
        if (problem !== null) checked++
        if (typeof problem === 'string') failures.push(`${problem}\nlog:\n  ${log.map((e, i) => `${i + 1} ${e.type} ${JSON.stringify(e.data)}`).join('\n  ')}`)
      }
    }
    console.log(`readers from a checkpoint: ${logs.size} distinct logs, ${cuts} cuts${EVERY_CUT ? '' : ` (one in ${CUT_STRIDE}, the last, the first of each of ${kinds.size} kinds)`} (${reused} after events an earlier log began with), ${checked} with a checkpoint, ${failures.length} differ`)
    expect(failures.slice(0, 3)).toEqual([])
    // Most cuts take a checkpoint (none is made while a review is open or a handoff due).
    expect(checked).toBeGreaterThan(cuts / 2)
  })

  it('R60, R63: the chart never says stopped while an append is still in flight', () => {
    // Such an edge is left out of the graph (the service stops the actor, the oracle lets the
    // work land); each is listed here as the shortest path to it, with the state it reaches.
    const breaks = [...withChannel.invariantBreaks, ...withoutChannel.invariantBreaks, ...durable.invariantBreaks]
    expect(breaks.map((path) => `${pathName(path)}\n    → ${path.keys.at(-1)}`)).toEqual([])
  })

  it('R73: the close timeout may expire in every closing state, and stops the actor with no append left in flight', () => {
    // A closing state has work in flight (without any the chart is stopped at once); each is the
    // source of a timeout edge, which ends in `stopped` with nothing tagged `appending` (the
    // raised ABANDONED leaves every appending state in the same macrostep).
    const value = (key: string) => (JSON.parse(key) as { value: Record<string, unknown> }).value
    for (const config of [withChannel, withoutChannel]) {
      const closing = new Set(config.paths.flatMap((path) => path.keys).filter((key) => value(key).lifecycle === 'closing'))
      const timeouts = config.paths.filter((path) => path.letters.at(-1)!.label === 'close timeout expires')
      expect(closing.size).toBeGreaterThan(0)
      expect(new Set(timeouts.map((path) => path.keys.at(-2)))).toEqual(closing)
    }
    // The durable graph's paths are chosen for coverage: every closing vertex of it has its
    // timeout edge (and each of those edges is replayed, being a coverage target of its own).
    const durableTimeouts = durable.closingTimeouts!
    expect(durableTimeouts.size).toBeGreaterThan(0)
    expect([...durableTimeouts].filter(([, next]) => next === undefined).map(([key]) => key)).toEqual([])
    const replayedFrom = new Set(
      durable.paths.flatMap((path) => path.letters.flatMap((letter, i) => (letter.label === 'close timeout expires' ? [i === 0 ? null : path.keys[i - 1]] : []))),
    )
    expect([...durableTimeouts.keys()].filter((key) => !replayedFrom.has(key))).toEqual([])
    const timeouts = paths.filter((path) => path.letters.at(-1)!.label === 'close timeout expires')
    const { context } = createActor(planModeMachine).getSnapshot()
    for (const path of timeouts) {
      const after = planModeMachine.resolveState({ value: value(path.keys.at(-1)!) as never, context })
      expect(after.value, pathName(path)).toMatchObject({ lifecycle: 'stopped' })
      expect(after.hasTag('appending'), pathName(path)).toBe(false)
    }
  })

  it("R94, R95: the policy letters are replayed up to their records' landing, and a policy's and a user's approval of one review race both ways", async () => {
    // The replays above compare each record with the oracle's byte for byte (`by: 'policy'` last);
    // this says that the generated paths hold those landings.
    expect(runs('channel', 'answer approve by policy (R94)', lands)).toBe(true)
    expect(runs('channel', 'dismiss review by policy (R94)', lands)).toBe(true)
    expect(runs('durable', 'answerReviewByPolicy(approve) (R95)', lands)).toBe(true)
    expect(runs('durable', 'answerReviewByPolicy(stop) (R95)', lands)).toBe(true)
    // With no durable review open it resolves null and the chart hears nothing (R95): the walks
    // replay it where the review region is idle (the state key before the letter says so).
    const idleBefore = (path: ModelPath, i: number) => (i === 0 ? true : (JSON.parse(path.keys[i - 1]!) as { value: { review: unknown } }).value.review === 'idle')
    expect(durable.paths.some((path) => path.letters.some((letter, i) => letter.label === 'answerReviewByPolicy(approve) (R95)' && idleBefore(path, i)))).toBe(true)
    // R95: whichever of the two records the log holds second lost. (The state key no longer holds
    // our outcome once another record outran it, so the walks need not take both races: replayed here.)
    await replayPath(durablePath(['another writer requests a review', 'answerReviewByPolicy(approve) (R95)', 'another writer approves', lands]))
    await replayPath(durablePath(['another writer requests a review', 'answerReview(approve)', 'another writer approves by policy (R95)', lands]))
  })

  it("R101: the decision letters are replayed up to their records' landing, a fresh approval races a plain one, and a boundary tells an untold leave", () => {
    // The replays above compare each record with the oracle's byte for byte (`fresh: true`, R101)
    // and every exit call's, answer's and boundary's result.
    expect(runs('channel', 'answer approve fresh (R101)', lands)).toBe(true)
    expect(runs('channel', 'answer leave (R101)', lands)).toBe(true)
    for (const answer of ['approve fresh (R101)', 'approve fresh, told in result (R101)', 'leave (R101)', 'leave, told in result (R101)']) {
      expect(runs('durable', `answerReview(${answer})`, lands), answer).toBe(true)
    }
    // R80: the plain approval another writer logged first, and this service's fresh one second,
    // is replayed below ("an answer approving into a fresh context whose record lands after …").
    // R81: boundaries tell an untold leave (the breadth-first graph reaches its states first
    // through another writer's leave, one step shorter than this service's answer and record).
    const later = (config: ModelPath['config'], ...labels: string[]) =>
      paths.some((path) => {
        if (path.config !== config) return false
        let next = 0
        for (const letter of path.letters) if (letter.label === labels[next]) next++
        return next === labels.length
      })
    expect(later('durable', 'another writer leaves (R101)', 'stepBoundary')).toBe(true)
  })

  it('R86: a second /plan another writer logs while a success is held back behind our own append replaces it, and is taken when the append settles', async () => {
    const run = 'log command/run /plan off (second command)'
    const done = 'log command/done success (second command)'
    // The first /plan (on) succeeds while our own append is in flight; the second (off) replaces
    // it. (The walks take each of these edges, not always one after another: replayed here.)
    await replayPath(tourPath('no-channel', ['set(true)', 'log command/run /plan', 'log command/done success', run, done, 'log plan/mode true', 'plan/mode append resolves']))
    expect(runs('no-channel', run, done, 'plan/mode append resolves')).toBe(true)
    expect(runs('no-channel', run, done, 'plan/mode append fails')).toBe(true)
    expect(runs('no-channel', 'log command/run /plan (second command)', done)).toBe(true)
  })

  it('R1–R64: every state and transition of the chart is reached by the generated paths', async () => {
    // Run on its own (a name filter), it replays the paths itself; a failing replay still counts what it reached.
    if (replayed === 0) for (const path of paths) keepLog((await replayPath(path, coverage).catch(() => undefined))?.log(AGENT).events ?? [])
    // R64: attach takes the chart's own transitions (RESTORE) from every log the paths made.
    // Attach's snapshot is the one that transition makes, for every one of them. Many logs restore
    // the same (plain data): each distinct restore is taken once.
    const restores = new Map<string, ReturnType<typeof restorePlanLog>>()
    for (const log of logs.values()) {
      const restore = restorePlanLog(createMemorySessionLog(log).events)
      restores.set(JSON.stringify(restore), restore)
    }
    expect(coverRestores(restores.values(), coverage).slice(0, 3)).toEqual([])
    const { states, transitions } = chartDefinition()
    const allowed = new Set(Object.keys(UNREACHABLE))
    const missingStates = states.filter((s) => !coverage.states.has(s))
    const missingTransitions = transitions.filter((t) => !coverage.transitions.has(t) && !allowed.has(t))
    const reachedTransitions = transitions.filter((t) => coverage.transitions.has(t)).length
    const reachable = transitions.length - allowed.size
    console.log(
      `states ${states.length - missingStates.length}/${states.length}, ` +
        `transitions ${reachedTransitions}/${reachable}${allowed.size ? ` (+${allowed.size} allow-listed unreachable)` : ''}, ` +
        `paths ${paths.length} = ${withChannel.paths.length}+${withoutChannel.paths.length}+${durable.paths.length} ` +
        `(${paths.reduce((n, path) => n + path.letters.length, 0)} steps) ` +
        `(graphs: ${withChannel.vertices}+${withoutChannel.vertices}+${durable.vertices} states, ` +
        `${withChannel.edges}+${withoutChannel.edges}+${durable.edges} edges; channel+no channel+durable)`,
    )
    expect(missingStates).toEqual([])
    expect(missingTransitions).toEqual([])
    // An allow-listed transition that is reached after all must leave the list.
    expect([...allowed].filter((t) => coverage.transitions.has(t))).toEqual([])
  })
})

/**
 * The three paths on which the model found the chart and the spec apart for R101: the spec now
 * says what the chart does for the record's key order and for a leave under plan mode entered
 * again, and the chart was fixed for a fresh approval racing a plain one (it resolved approved).
 */
describe('R101: the chart against the oracle on the paths that found the decisions\' bugs', () => {
  it("R101, R80: an answer approving into a fresh context whose record lands after another writer's plain approval of the review has lost: it rejects as already closed (regression: it resolved approved)", async () => {
    await replayPath(durablePath(['another writer requests a review', 'answerReview(approve fresh (R101))', 'another writer approves', 'plan/review append resolves']))
  })

  it('R101, R49: a durable fresh approval told in the result is recorded `…, fresh: true, toldInResult: true`', async () => {
    await replayPath(durablePath(['another writer requests a review', 'answerReview(approve fresh, told in result (R101))', 'plan/review append resolves']))
  })

  it('R102, R76: a fresh approval a request followed before the checkpoint is not due again from the checkpoint and the events after it (regression: the handoff was due again)', () => {
    // Found by the chained walks: the tail after the checkpoint holds no request/header, and the
    // due handoff read from it ignored that a checkpoint is made only when none is due.
    const log = [
      { type: 'plan/mode', data: { active: true } },
      { type: 'plan/review', data: { outcome: 'approved', title: 'Ship the importer', plan: '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.', fresh: true } },
      { type: 'request/header', data: {} },
      { type: 'turn/start', data: {} },
      { type: 'plan/mode', data: { active: false } },
    ]
    for (const k of [3, 4, 5]) expect(checkpointReadersDiffer(log, k), `checkpoint after ${k} events`).toBeUndefined()
    // Before the request, no checkpoint is made: the handoff is due.
    expect(checkpointReadersDiffer(log, 2)).toBeNull()
  })

  it('R101, R81: a durable leave not told in the result is not told once plan mode is entered again before the next boundary', async () => {
    await replayPath(durablePath(['log plan/mode true', 'another writer requests a review', 'answerReview(leave (R101))', 'plan/review append resolves', 'set(true)', 'stepBoundary']))
  })
})
