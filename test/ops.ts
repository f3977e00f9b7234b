/**
 * The operations of the property tests, as data (so fast-check can generate, shrink and print
 * them), and how each one runs on a twin (service + oracle).
 */
import fc from 'fast-check'
import { createMemorySessionLog, createPlanMode, foldPlanMode, type ReviewAnswer, type SessionEvent } from '../src/index.js'
import { settle } from './sut.js'
import { SECTION, Twin } from './twin.js'

/** Plans the exit tool is called with: valid ones, refused ones (R42.4, R42.5). */
export const PLANS = {
  simple: '# Ship the importer\n\n1. Parse.\n2. Store.',
  deep: '## Deep title  \nbody',
  indented: '  # Indented title\n- step',
  blankFirst: '\n\n###### Six\t \ntext',
  tabbed: '#\tTabbed title',
  noSpace: '#NoSpace',
  noHeading: 'Just do it.',
  empty: '',
  blank: '   ',
  sevenHashes: '####### Seven',
  headingLater: 'Intro\n# Later heading',
  tooLarge: '# Big\n' + 'x'.repeat(256 * 1024),
} as const

/** Answers to a review (R44, R45). */
export const REVIEW_ANSWERS: Record<string, unknown> = {
  approve: { answers: [{ id: 'plan-review', selected: ['Approve'] }] },
  approveBlankCustom: { answers: [{ id: 'plan-review', selected: ['Approve'], custom: '  \n ' }] },
  approveWithCustom: { answers: [{ id: 'plan-review', selected: ['Approve'], custom: 'but use SQLite' }] },
  keep: { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] },
  keepWithFeedback: { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: '  Split step 2.  ' }] },
  customOnly: { answers: [{ id: 'plan-review', selected: [], custom: 'What about tests?' }] },
  noItems: { answers: [] },
  duplicates: {
    answers: [
      { id: 'plan-review', selected: ['Approve'] },
      { id: 'plan-review', selected: ['Approve'] },
    ],
  },
  otherIdThenApprove: {
    answers: [
      { id: 'other', selected: ['Keep planning'] },
      { id: 'plan-review', selected: ['Approve'] },
    ],
  },
  severalSelections: { answers: [{ id: 'plan-review', selected: ['Approve', 'Keep planning'] }] },
  malformed: { answers: 'yes' },
}

/** One operation of a property run. `a` picks the agent (modulo the run's agent count). */
export type Op =
  | { kind: 'set'; a: number; active: boolean }
  | { kind: 'command'; a: number; raw: string; attachments: boolean; canSteer: boolean }
  | { kind: 'step'; a: number }
  | { kind: 'abortedStep'; a: number }
  | { kind: 'header'; a: number }
  | { kind: 'turnStart'; a: number }
  | { kind: 'turnEnd'; a: number }
  | { kind: 'foreignFlip'; a: number }
  | { kind: 'open'; a: number; plan: keyof typeof PLANS; owned: boolean; preAborted: boolean; askThrows: boolean }
  | { kind: 'openBadArgs'; a: number; args: 'number' | 'missing' | 'null' | 'noAgent' }
  | { kind: 'answer'; a: number; answer: string }
  | { kind: 'rejectAsk'; a: number; dismiss: boolean }
  | { kind: 'abort'; a: number; reason: 'error' | 'string' | 'plain' }
  | { kind: 'lateAnswer'; a: number; answer: string }
  | { kind: 'failNext'; a: number; how: 'throw' | 'reject' }
  | { kind: 'detach'; a: number }
  | { kind: 'restart' }
  | { kind: 'release'; a: number; how: 'publish' | 'resolve' | 'reject' }
  | { kind: 'boundary'; a: number }

/** Mostly the first agent, so that one agent's story gets long; sometimes the others. */
const agentIndex = fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.nat({ max: 2 }) })

/**
 * The operation generator; `foreign` adds a second writer that flips F; `held` is for a log whose
 * service appends wait for a `release` (no restart then: a dispose waits for them; a step is a
 * bare boundary, the header its own operation).
 */
export function opArbitrary({ foreign, held = false }: { foreign: boolean; held?: boolean }): fc.Arbitrary<Op> {
  const weighted: fc.WeightedArbitrary<Op>[] = [
    // Entering plan mode more often than leaving, so that reviews can open.
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), a: agentIndex, active: fc.oneof({ weight: 2, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('command' as const),
        a: agentIndex,
        raw: fc.constantFrom('', 'off', 'OFF', ' Off ', 'draft the migration', '  '),
        attachments: fc.boolean(),
        canSteer: fc.boolean(),
      }),
    },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('abortedStep' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('header' as const), a: agentIndex }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('turnStart' as const), a: agentIndex }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('turnEnd' as const), a: agentIndex }) },
    {
      // Mostly a valid plan; sometimes another plan, an owned agent, a pre-aborted signal or a channel that throws.
      weight: 8,
      arbitrary: fc
        .tuple(agentIndex, fc.constantFrom(...(Object.keys(PLANS) as (keyof typeof PLANS)[])), fc.nat({ max: 9 }))
        .map(([a, plan, variant]) => ({
          kind: 'open' as const,
          a,
          plan: variant < 5 ? ('simple' as const) : plan,
          owned: variant === 9,
          preAborted: variant === 8,
          askThrows: variant === 7,
        })),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('openBadArgs' as const), a: agentIndex, args: fc.constantFrom('number' as const, 'missing' as const, 'null' as const, 'noAgent' as const) }) },
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('answer' as const),
        a: agentIndex,
        // Consent often enough that approvals meet everything else.
        answer: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom('approve', 'approveBlankCustom', 'otherIdThenApprove') },
          { weight: 3, arbitrary: fc.constantFrom(...Object.keys(REVIEW_ANSWERS)) },
        ),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('rejectAsk' as const), a: agentIndex, dismiss: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), a: agentIndex, reason: fc.constantFrom('error' as const, 'string' as const, 'plain' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('lateAnswer' as const), a: agentIndex, answer: fc.constantFrom('approve', 'keep') }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('failNext' as const), a: agentIndex, how: fc.constantFrom('throw' as const, 'reject' as const) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('detach' as const), a: agentIndex }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  ]
  if (foreign) weighted.push({ weight: 2, arbitrary: fc.record({ kind: fc.constant('foreignFlip' as const), a: agentIndex }) })
  if (!held) return fc.oneof(...weighted)
  const kept = [...weighted]
  kept.push(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('release' as const), a: agentIndex, how: fc.constantFrom('publish' as const, 'resolve' as const, 'resolve' as const, 'reject' as const) }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('boundary' as const), a: agentIndex }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('header' as const), a: agentIndex }) },
  )
  // A channel that throws is told so per call; with queued calls the tests cannot tell which ask it is.
  return fc
    .oneof(...kept)
    .filter((op) => op.kind !== 'restart' && op.kind !== 'step')
    .map((op) => (op.kind === 'open' ? { ...op, askThrows: false } : op))
}

/** Runs one operation on the twin, then compares everything (twin.check). */
export async function runOp(twin: Twin, op: Op, ids: string[]): Promise<void> {
  const id = op.kind === 'restart' ? '' : ids[op.a % ids.length]!
  switch (op.kind) {
    case 'set':
      twin.set(id, op.active)
      break
    case 'command':
      await twin.command(id, op.raw, {
        ...(op.attachments ? { attachments: [{ type: 'image', url: 'file://shot.png' }] } : {}),
        canSteer: op.canSteer,
      })
      break
    case 'step':
      await twin.step(id)
      break
    case 'abortedStep':
      await twin.step(id, true)
      break
    case 'header':
      twin.hostAppend(id, 'request/header', { model: 'm' })
      break
    case 'turnStart':
      twin.hostAppend(id, 'turn/start', {})
      break
    case 'turnEnd':
      twin.hostAppend(id, 'turn/end', {})
      break
    case 'foreignFlip':
      twin.hostAppend(id, 'plan/mode', { active: !foldPlanMode(twin.log(id).events) })
      break
    case 'open':
      twin.execute(id, { plan: PLANS[op.plan] }, {
        owned: op.owned,
        ...(op.preAborted ? { preAborted: new Error('the turn was cancelled') } : {}),
        ...(op.askThrows ? { askThrows: new Error('the review UI is not mounted') } : {}),
      })
      break
    case 'openBadArgs':
      if (op.args === 'noAgent') twin.execute(undefined, { plan: PLANS.simple })
      else twin.execute(id, op.args === 'number' ? { plan: 42 } : op.args === 'missing' ? {} : null)
      break
    case 'answer': {
      const index = twin.openAskIndex(id)
      if (index !== undefined) twin.answer(index, REVIEW_ANSWERS[op.answer] as ReviewAnswer)
      break
    }
    case 'rejectAsk': {
      const index = twin.openAskIndex(id)
      if (index === undefined) break
      twin.rejectAsk(index, op.dismiss ? Object.assign(new Error('dismissed'), { code: 'ASK_CANCELLED' }) : new Error('the review UI crashed'))
      break
    }
    case 'abort': {
      const call = [...twin.calls].reverse().find(
        (c) => c.oracle.kind === 'review' && c.oracle.agentId === id && c.oracle.state.status === 'pending' && !c.controller!.signal.aborted,
      )
      if (call) twin.abort(call, op.reason === 'error' ? new Error('stopped by the host') : op.reason === 'string' ? 'user left' : 'plain')
      break
    }
    case 'lateAnswer': {
      const index = twin.oracle.asks.findIndex((ask, i) => ask.agentId === id && ask.stale && !twin.channel.asks[i]!.answered)
      if (index >= 0) twin.answer(index, REVIEW_ANSWERS[op.answer] as ReviewAnswer)
      break
    }
    case 'failNext':
      twin.failNextAppend(id, op.how)
      break
    case 'detach':
      twin.detach(id)
      break
    case 'restart':
      await twin.restart()
      break
    case 'release':
      twin.releaseOldest(id, op.how)
      break
    case 'boundary':
      twin.boundary(id)
      break
  }
  await settle()
  twin.check()
}

/**
 * What a fresh service over a copy of `events` reads: `get().active`, and K, observed through
 * notices (R31, R32): a copy with `plan/mode {!F}` appended narrates iff K = F, one with
 * `plan/mode {F}` narrates iff K = !F (a `plan/mode` clears any kept selection, R58), neither
 * when K is undefined.
 */
export async function reattachProbe(events: readonly SessionEvent[]): Promise<{ active: boolean; told: boolean | undefined }> {
  const F = foldPlanMode(events)
  const copy = events.map(({ type, data }) => ({ type, data }))
  const run = async (extra: { type: string; data: unknown }[]) => {
    const planMode = createPlanMode({ section: SECTION }, { logger: { warn: () => {} } })
    const agent = { id: 'probe', session: createMemorySessionLog([...copy, ...extra]) }
    const active = planMode.get(agent).active
    const { messages } = await planMode.stepBoundary(agent)
    await planMode.dispose()
    return { active, narrates: messages.length > 0 }
  }
  const plain = await run([])
  const flipped = await run([{ type: 'plan/mode', data: { active: !F } }])
  const same = await run([{ type: 'plan/mode', data: { active: F } }])
  if (flipped.narrates && same.narrates) throw new Error('R32: both probes narrated')
  return { active: plain.active, told: flipped.narrates ? F : same.narrates ? !F : undefined }
}
