import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import * as core from '../src/index.js'
import * as inspect from '../src/adapters/inspect.js'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import { COMMAND_DONE_EVENT, COMMAND_RUN_EVENT, PLAN_MODE_EVENT, PLAN_REVIEW_EVENT, PLAN_VIOLATION_EVENT, REQUEST_HEADER_EVENT, TURN_END_EVENT, TURN_START_EVENT } from '../src/log/kinds.js'

/**
 * The core entry point's surface (issue #25, docs/spec.md §1): what a host calls and the types it
 * writes code against, 60 names at most. A name added or removed here is a conscious change: this
 * list, the spec's §1 and the API reference change with it.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The runtime exports of `xstate-plan-mode`, sorted. */
const VALUES = [
  'EXIT_PLAN_MODE',
  'PLAN_CHECKPOINT_VERSION',
  'PLAN_LOG_EVENTS',
  'PLAN_MODE_TEXTS',
  'PLAN_POLICY_ORDER',
  'PLAN_POLICY_SECTION',
  'createCallTranscript',
  'createMemoryCheckpointStore',
  'createMemorySessionLog',
  'createPlanHistory',
  'createPlanMode',
  'describePlanLogEvent',
  'diffPlans',
  'dueHandoff',
  'episodeBefore',
  'eventDigest',
  'foldPlanLogEvent',
  'foldPlanMode',
  'foldViolations',
  'formatPlanDiff',
  'headlessReview',
  'planHistory',
  'planProjection',
  'readCheckpoint',
  'replayFromCheckpoint',
  'replayPlanLog',
  'validatePlanModeEvent',
]

/** The type-only exports of `xstate-plan-mode`, sorted. */
const TYPES = [
  'ApprovedPlan',
  'CheckpointStore',
  'CommandResult',
  'ExitPlanModeTool',
  'OpenReviewView',
  'PendingStore',
  'PlanAgent',
  'PlanCheckpoint',
  'PlanCommand',
  'PlanDiffLine',
  'PlanHistoryReader',
  'PlanLogFold',
  'PlanLogLine',
  'PlanMode',
  'PlanModeActor',
  'PlanModeData',
  'PlanModeOptions',
  'PlanProjection',
  'PlanReviewData',
  'PresentedPlan',
  'ReviewAnswer',
  'ReviewChannel',
  'ReviewComment',
  'ReviewOutcome',
  'ReviewQuestion',
  'ReviewRequest',
  'SessionEvent',
  'SessionLog',
  'StepBoundaryResult',
  'UserMessage',
  'ViolationFold',
]

/** Every name `src/index.ts` exports, split into values and type-only names, read with the TypeScript checker. */
function declaredExports(): { values: string[]; types: string[] } {
  const file = `${ROOT}src/index.ts`
  const program = ts.createProgram([file], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    // No `@types/*` package is read unless src/ imports it: the exports are src/index.ts's
    // (278 files parsed → 155, 1.9 s → 0.8 s of CPU; the same names, values and types).
    types: [],
  })
  const checker = program.getTypeChecker()
  const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
  const values: string[] = []
  const types: string[] = []
  for (const symbol of checker.getExportsOfModule(module)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
    ;(target.flags & ts.SymbolFlags.Value ? values : types).push(symbol.name)
  }
  return { values: values.sort(), types: types.sort() }
}

/** Every string in a nested table, with its path (`review.labels.approve`). */
function strings(table: object, path = ''): [string, string][] {
  return Object.entries(table).flatMap(([key, value]): [string, string][] =>
    typeof value === 'string' ? [[`${path}${key}`, value]] : typeof value === 'object' && value !== null ? strings(value, `${path}${key}.`) : [],
  )
}

describe('the core entry point (issue #25: a smaller public surface)', () => {
  it('exports exactly these values at run time', () => {
    expect(Object.keys(core).sort()).toEqual(VALUES)
  })

  it('declares exactly these names, values and types: 60 at most', () => {
    const { values, types } = declaredExports()
    expect(values).toEqual(VALUES)
    expect(types).toEqual(TYPES)
    expect(values.length + types.length).toBeLessThanOrEqual(60)
  })

  it('the statechart is in xstate-plan-mode/inspect, not in the core', () => {
    expect(inspect.planModeMachine).toBe(planModeMachine)
    expect('planModeMachine' in core).toBe(false)
  })

  it('PLAN_LOG_EVENTS is the table of the log event types, frozen', () => {
    expect(core.PLAN_LOG_EVENTS).toEqual({
      mode: PLAN_MODE_EVENT,
      review: PLAN_REVIEW_EVENT,
      turnStart: TURN_START_EVENT,
      turnEnd: TURN_END_EVENT,
      requestHeader: REQUEST_HEADER_EVENT,
      commandRun: COMMAND_RUN_EVENT,
      commandDone: COMMAND_DONE_EVENT,
      violation: PLAN_VIOLATION_EVENT,
    })
    expect(Object.values(core.PLAN_LOG_EVENTS)).toEqual(['plan/mode', 'plan/review', 'turn/start', 'turn/end', 'request/header', 'command/run', 'command/done', 'plan/violation'])
    expect(Object.isFrozen(core.PLAN_LOG_EVENTS)).toBe(true)
  })

  it('PLAN_MODE_TEXTS holds every text byte for byte as docs/spec.md gives it, grouped by where it shows, frozen all the way down', () => {
    const spec = readFileSync(`${ROOT}docs/spec.md`, 'utf8')
    const texts = strings(core.PLAN_MODE_TEXTS)
    expect(texts.map(([path]) => path.split('.')[0])).toEqual(expect.arrayContaining(['tool', 'notices', 'review', 'errors']))
    expect(texts.length).toBe(3 + 3 + 4 + Object.keys(core.PLAN_MODE_TEXTS.review.messages).length + 3)
    const missing = texts.filter(([, text]) => !spec.includes(text)).map(([path]) => path)
    expect(missing).toEqual([])
    const frozen = (value: object): boolean => Object.isFrozen(value) && Object.values(value).every((inner) => typeof inner !== 'object' || inner === null || frozen(inner))
    expect(frozen(core.PLAN_MODE_TEXTS)).toBe(true)
  })

  it('PLAN_MODE_TEXTS.review gives the review question and a plan title', () => {
    const { question, title, labels } = core.PLAN_MODE_TEXTS.review
    expect(question('# Ship it', 'all').options.map((option) => option.label)).toEqual([labels.approve, labels.keepPlanning, labels.approveFresh, labels.leave])
    expect(question('# Ship it').options.map((option) => option.label)).toEqual(['Approve', 'Keep planning'])
    expect(title('intro\n## Ship it  \nsteps')).toBe('Ship it')
  })
})
