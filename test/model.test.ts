import { describe, expect, it } from 'vitest'
import { createActor } from 'xstate'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import { CoverageCollector, chartDefinition, generatePaths, pathName, replayPath, type ModelPath } from './model.js'

/**
 * Model-based tests: every edge of the plan-mode statechart's reachable graph (as the service
 * can drive it) in the channel and no-channel configurations, and the edges of the durable
 * reviews' graph (R78–R81) that reach what no shorter path reached, replayed on the real service
 * and checked against the SPEC oracle after every step; then the coverage of the chart's
 * definition by those replays. Headless review policies (R94, R95) are letters of the channel
 * (a policy's approval and dismissal) and durable (`answerReviewByPolicy`, another writer's policy
 * approval) alphabets. Edges where the chart stops with an append in flight are not
 * replayable (the service stops the actor under the work): they are left out of the graph and
 * fail a test of their own.
 */

/**
 * Transitions of the definition that no path through the service can take, with the reason.
 * Keyed like `chartDefinition()` (`<source state id> <event> #<index>`).
 */
export const UNREACHABLE: Readonly<Record<string, string>> = {}

const withChannel = generatePaths('channel')
const withoutChannel = generatePaths('no-channel')
const durable = generatePaths('durable')
const paths: ModelPath[] = [...withChannel.paths, ...withoutChannel.paths, ...durable.paths]
const coverage = new CoverageCollector()
let replayed = 0

describe('R1–R64, R78–R81, R94, R95 model-based: paths of the statechart replayed on the service against the oracle', () => {
  it.each(paths.map((path, i) => [i + 1, pathName(path), path] as const))(
    'path %i: %s',
    async (_i, _name, path) => {
      replayed++
      await replayPath(path, coverage)
    },
  )

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

  it("R94, R95: the policy letters are replayed up to their records' landing, and a policy's and a user's approval of one review race both ways", () => {
    // The replays above compare each record with the oracle's byte for byte (`by: 'policy'` last);
    // this says that the generated paths hold those landings.
    const runs = (config: ModelPath['config'], ...labels: string[]) =>
      paths.some((path) => {
        if (path.config !== config) return false
        const names = path.letters.map((letter) => letter.label)
        return names.some((_, i) => labels.every((label, j) => names[i + j] === label))
      })
    const lands = 'plan/review append resolves'
    expect(runs('channel', 'answer approve by policy (R94)', lands)).toBe(true)
    expect(runs('channel', 'dismiss review by policy (R94)', lands)).toBe(true)
    expect(runs('durable', 'answerReviewByPolicy(approve) (R95)', lands)).toBe(true)
    expect(runs('durable', 'answerReviewByPolicy(stop) (R95)', lands)).toBe(true)
    // With no durable review open it resolves null and the chart hears nothing (R95).
    expect(durable.paths.some((path) => path.letters[0]?.label === 'answerReviewByPolicy(approve) (R95)')).toBe(true)
    // R95: whichever of the two records the log holds second lost.
    expect(runs('durable', 'answerReviewByPolicy(approve) (R95)', 'another writer approves', lands)).toBe(true)
    expect(runs('durable', 'answerReview(approve)', 'another writer approves by policy (R95)', lands)).toBe(true)
  })

  it('R1–R64: every state and transition of the chart is reached by the generated paths', async () => {
    // Run on its own (a name filter), it replays the paths itself; a failing replay still counts what it reached.
    if (replayed === 0) for (const path of paths) await replayPath(path, coverage).catch(() => {})
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
        `(graphs: ${withChannel.vertices}+${withoutChannel.vertices}+${durable.vertices} states, ` +
        `${withChannel.edges}+${withoutChannel.edges}+${durable.edges} edges; channel+no channel+durable)`,
    )
    expect(missingStates).toEqual([])
    expect(missingTransitions).toEqual([])
    // An allow-listed transition that is reached after all must leave the list.
    expect([...allowed].filter((t) => coverage.transitions.has(t))).toEqual([])
  })
})
