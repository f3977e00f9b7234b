/**
 * The conformance kit's scenarios as plain async functions that throw, for any test runner
 * (`xstate-plan-mode/testing/scenarios`): `conformanceScenarios` and `durableReviewScenarios` list
 * them, `checkConformance` and `checkDurableReviews` run them all. The runners' wrappers
 * (`xstate-plan-mode/testing` for vitest, `xstate-plan-mode/testing/node` for `node:test`) make
 * one test of each. No test runner and no agent framework is imported here.
 *
 * @module xstate-plan-mode/testing/scenarios
 */
import { equal, isNull, match, same } from './assert.js'

/** What the model received from plan mode for one step (`ConformanceAgent.step`). */
export interface ConformanceStep {
  /**
   * The plan section exactly as sent to the model (the kit compares it with
   * `ConformanceHost.section`), read back from what was sent (for example the system prompt minus
   * the host's base prompt); `''` when it was not sent (R18).
   */
  section: string
  /**
   * The texts of the plan-mode notices that are new at this step, in order (R32, R33): what
   * `stepBoundary` returned for this step. Not the notices of earlier steps that the step sends
   * again (kept in the history, or put back by `createCallTranscript`), and not steered
   * `/plan <message>` texts.
   */
  notices: string[]
}

/** A review question as the host's review channel received it (R43). */
export interface ConformanceReview {
  /** The request the channel's `ask` received (`ReviewRequest`): the kit checks the questions and the signal. */
  readonly request: { questions: unknown[]; signal: AbortSignal }
  /** The user answers: settle the channel's `ask` with this answer (comments anchored to the plan: R100). */
  answer(answer: { answers: { id: string; selected: string[]; custom?: string; comments?: { quote: string; text: string }[] }[] }): void
  /**
   * The user dismisses the review to speak instead: reject the channel's `ask` with an error
   * whose `code` is `'ASK_CANCELLED'` (R46).
   */
  dismiss(): void
}

/**
 * One agent of the host under test, driven the way the host drives it in production: each member
 * does what the host's own code does at that moment, through the host's own wiring (its loop,
 * its adapter, its log and review UI), and reports what was observable. The kit calls the
 * members in orders a real session produces, including some a host may not expect: `step()`
 * with no turn open, `callExitTool` between turns, `command` during a review.
 *
 * ```ts
 * const driver: ConformanceAgent = {
 *   events: () => log.events,
 *   startTurn: async () => void (await log.append('turn/start', {})),
 *   endTurn: async () => void (await log.append('turn/end', {})),
 *   async step({ signal } = {}) {
 *     const { section, messages } = await planMode.stepBoundary(agent, signal ? { signal } : {})
 *     if (!signal?.aborted) await log.append('request/header', {})
 *     return { section, notices: messages.map((m) => (m.content[0] as { text: string }).text) }
 *   },
 *   command: runLoggedPlanCommand,         // logs command/run and command/done around command.run
 *   get: () => planMode.get(agent),
 *   callExitTool: (args, { signal } = {}) =>
 *     planMode.exitTool.execute(args, { agent, signal }).catch((error: Error) => ({ error: error.message })),
 *   nextReview: () => reviews.next(agent.id), // the questions this agent's review channel received
 *   steered: () => steered,
 *   restart: async () => { await planMode.dispose(); return createDriver(log) },
 * }
 * ```
 */
export interface ConformanceAgent {
  /**
   * The agent's session log as the host stores it, every event the host and the service
   * appended, in order (the kit reads `type` and `data`). The kit checks the `plan/mode` and
   * `plan/review` events, and that a step's `plan/mode` comes before anything the host logs for
   * that step (R17).
   */
  events(): readonly { type: string; data: unknown }[]
  /** A turn starts: log `turn/start` as the host does (R5). */
  startTurn(): void | Promise<void>
  /** The turn ends: log `turn/end` as the host does (R5). */
  endTurn(): void | Promise<void>
  /**
   * Runs one step of the agent's loop, as the host runs a step: first the step boundary (passing
   * `signal`, R14, R15), then what the host logs for the step (its `request/header`, R17, R30)
   * and the request it sends the model. Returns the section and the notices as sent.
   *
   * - It is also called with no turn open (a new agent's first step, R4): run the step all the
   *   same; do not refuse, and do not open a turn for it.
   * - With a `signal` that is already aborted the host sends nothing and logs no header (R15,
   *   R30): return `{ section: '', notices: [] }` (or what the boundary answered; the kit aborts
   *   only steps whose section is `''`).
   * - `notices` are only the ones new at this step (see `ConformanceStep.notices`).
   */
  step(options?: { signal?: AbortSignal }): Promise<ConformanceStep>
  /**
   * Runs `/plan` as the user typed it. `rawInput` is the text after `/plan`, untrimmed: the kit
   * passes `''` (a bare `/plan`), `'off'` and `'  draft the migration '`. Hand it on as
   * `PlanCommandInput.rawInput` (the core trims it, R54), and log the command the way the host
   * logs commands: `command/run { commandId, name: 'plan', args: rawInput }` before the run and
   * `command/done { commandId, kind }` after it (R58; the library never logs them itself, and a
   * host that does not log them needs a durable `pendingStore` for `restart`). Resolve the run's
   * `{ kind, text }` unchanged.
   */
  command(rawInput: string, attachments?: unknown[]): Promise<{ kind: 'success' | 'error'; text: string }>
  /** `PlanMode.get` for this agent (R7). */
  get(): { active: boolean; pending?: boolean }
  /**
   * Calls `exit_plan_mode` as the model does, through the host's tool wiring. Resolves
   * `{ approved: true }` on approval, or `{ error: <text> }` with the text the host gives the
   * model for a failed call: the rejection's `message` (R42–R48). It is called between turns
   * too, and may stay open across `command` and `nextReview` calls.
   */
  callExitTool(args: unknown, options?: { signal?: AbortSignal }): Promise<{ approved: true } | { submitted: true; reviewId: string } | { error: string }>
  /**
   * The next review question this agent's review channel receives (one that came already, or
   * the next to come), with the means to answer or dismiss it. A host whose agents share one
   * service (and so one `ReviewChannel`) routes each question by `request.agent.id` to that
   * agent's driver.
   */
  nextReview(): Promise<ConformanceReview>
  /** The user messages `/plan <message>` steered into this agent so far, in order, as it received them (R56). */
  steered(): readonly { content: unknown[]; source?: unknown }[]
  /**
   * Optional: a restart. Dispose the service (a reload, R60) and return a driver for the same
   * agent served by a new service over the same log, as after a process restart. A selection
   * still pending must survive it (R64): log `command/run`/`command/done` as `command` says, or
   * give the service a durable `pendingStore`. Without `restart` the scenarios that need it are
   * skipped.
   */
  restart?(): Promise<ConformanceAgent>
}

/** A host under test. */
export interface ConformanceHost {
  /** The `section` (`PlanModeOptions`) the host configured (the kit expects it back from `step()`). */
  readonly section: string
  /** A new agent over an empty session log, with its driver. */
  createAgent(): ConformanceAgent | Promise<ConformanceAgent>
  /** Called after each scenario. */
  dispose?(): void | Promise<void>
}

/** Options of `defineConformanceSuite`, `conformanceScenarios` and `checkConformance` (which need no `name`). */
export interface ConformanceSuiteOptions {
  /** The suite's name (a `describe` title, or the prefix of `checkConformance`'s error). */
  name: string
  /** A fresh host per scenario. */
  createHost(): ConformanceHost | Promise<ConformanceHost>
  /**
   * The decisions the host's service offers (`createPlanMode`'s `decisions`, R101): with `'all'`
   * the kit expects the four options and adds scenarios for the two it adds. Default `'approve-or-keep'`.
   */
  decisions?: 'approve-or-keep' | 'all'
}

/** A suite's options without its name, which only a runner's wrapper shows. */
export type ScenarioOptions<Options extends { name: string }> = Omit<Options, 'name'> & { name?: string }

/** How a scenario ended when it did not throw: it passed, or it did not apply to the driver (a member it needs is missing). */
export type ScenarioResult = { passed: true } | { skipped: string }

/** One scenario: its title, named by rule, and its run, which throws when the host breaks the rule. */
export interface ConformanceScenario {
  /** `R<n>: …`, the rule it checks first. */
  readonly title: string
  /** Runs it on a fresh host and agent, and disposes the host: resolves how it ended, or rejects with what failed. */
  run(): Promise<ScenarioResult>
}

/** Every failure of a run of scenarios, with its scenario's title; `cause` of each is the error it threw. */
export class ConformanceError extends AggregateError {
  constructor(suite: string, readonly failures: readonly { title: string; error: unknown }[]) {
    super(
      failures.map((failure) => failure.error),
      `xstate-plan-mode conformance: ${suite}: ${failures.length} scenario${failures.length === 1 ? '' : 's'} failed:\n` +
        failures.map(({ title, error }) => `- ${title}: ${error instanceof Error ? error.message : String(error)}`).join('\n'),
    )
    this.name = 'ConformanceError'
  }
}

/** What `checkConformance` and `checkDurableReviews` resolve: the titles that passed and the ones skipped, with why. */
export interface ConformanceReport {
  readonly passed: readonly string[]
  readonly skipped: readonly { title: string; reason: string }[]
}

/** Runs scenarios one after another; throws a `ConformanceError` listing every one that failed. */
async function runAll(suite: string, scenarios: readonly ConformanceScenario[]): Promise<ConformanceReport> {
  const passed: string[] = []
  const skipped: { title: string; reason: string }[] = []
  const failures: { title: string; error: unknown }[] = []
  for (const { title, run } of scenarios) {
    try {
      const result = await run()
      if ('skipped' in result) skipped.push({ title, reason: result.skipped })
      else passed.push(title)
    } catch (error) {
      failures.push({ title, error })
    }
  }
  if (failures.length > 0) throw new ConformanceError(suite, failures)
  return { passed, skipped }
}

/**
 * Runs every scenario of `conformanceScenarios` on the host, in order, from any test runner or a
 * script: resolves the report, or throws a `ConformanceError` naming each scenario that failed.
 * @example
 * await checkConformance({ name: 'my host', createHost: () => ({ section: MY_SECTION, createAgent: () => myDriver() }) })
 */
export function checkConformance(options: ScenarioOptions<ConformanceSuiteOptions>): Promise<ConformanceReport> {
  return runAll(options.name ?? 'host', conformanceScenarios(options))
}

/**
 * Runs every scenario of `durableReviewScenarios` on the host, in order: resolves the report, or
 * throws a `ConformanceError` naming each scenario that failed.
 */
export function checkDurableReviews(options: ScenarioOptions<DurableReviewSuiteOptions>): Promise<ConformanceReport> {
  return runAll(options.name ?? 'host', durableReviewScenarios(options))
}

/**
 * What a stock driver gives (`xstate-plan-mode/testing/<framework>`'s `conformanceSuites`): the
 * options of the suites its adapter passes, ready for `defineConformanceSuite` /
 * `defineDurableReviewSuite` of either runner, or for `checkConformance` / `checkDurableReviews`.
 * A framework whose adapter has no channel reviews (or no durable ones) leaves that member out.
 */
export interface StockConformanceSuites {
  /** The channel-review suite's options. */
  readonly channel?: ConformanceSuiteOptions
  /** The durable-review suite's options, with `toldInResult` as the adapter tells outcomes. */
  readonly durable?: DurableReviewSuiteOptions
}

/** SPEC's strings, quoted: the kit checks them exactly. */
const TEXT = {
  entering: 'The user switched this session to plan mode.',
  leaving: 'The user switched this session back to the default mode.',
  on: 'Plan mode on. Use /plan off to leave.',
  off: 'Plan mode off.',
  entryQueued: 'Entering plan mode (applies from the next step). Use /plan off to leave.',
  entryCancelled: 'Plan mode entry cancelled.',
  notInPlanMode: 'exit_plan_mode is only available in plan mode',
  keepPlanningFeedback: 'The user chose to keep planning; their feedback: ',
  dismissed:
    'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
  superseded: 'The user changed the plan mode directly; the review is closed.',
  approvedNews: 'The user approved your plan and plan mode is off; carry out the plan, starting now.',
  approvedResult: 'Plan approved — plan mode exited; carry out the plan starting with your next step.',
  keepPlanning: 'The user chose to keep planning; revise the plan and present it again.',
  left: 'The user left plan mode without carrying out the plan; stop here and wait for their message.',
  alreadyOpen: 'a plan review is already open for this agent; wait for its answer',
} as const

const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const TITLE = 'Ship the importer'

/** R43, R101: the question, quoted, for a service offering `decisions`. */
function question(decisions: 'approve-or-keep' | 'all') {
  const two = [
    { label: 'Approve', description: 'Leave plan mode; the plan is carried out from the next step.' },
    { label: 'Keep planning', description: 'Stay in plan mode; feedback goes back to the model.' },
  ]
  const more = [
    { label: 'Approve in a fresh context', description: 'Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.' },
    { label: 'Leave plan mode', description: 'Leave plan mode without carrying out the plan; the model stops and waits.' },
  ]
  return {
    id: 'plan-review',
    header: 'Plan review',
    question: 'Approve this plan and leave plan mode?',
    detail: PLAN,
    options: decisions === 'all' ? [...two, ...more] : two,
    intent: { kind: 'plan-review', approve: 'Approve' },
  }
}

const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }

/** The `plan/mode` values in the log, in order. */
function modes(agent: ConformanceAgent): boolean[] {
  return agent
    .events()
    .filter((e) => e.type === 'plan/mode')
    .map((e) => (e.data as { active: boolean }).active)
}

/** The `plan/review` outcomes in the log, in order. */
function reviews(agent: ConformanceAgent): unknown[] {
  return agent
    .events()
    .filter((e) => e.type === 'plan/review')
    .map((e) => e.data)
}

/**
 * SPEC's observable scenarios for a host's wiring, each a plain async function named by rule
 * (`R16: …`) that throws an `AssertionError` when the host gets the rule wrong.
 *
 * A host wires plan mode into its agent loop: it calls the step boundary at the right moment,
 * sends the section and the notices to the model, logs its turns, request headers and `/plan`
 * runs, registers `exit_plan_mode` and answers reviews in its UI. Each of those is a place to get
 * SPEC wrong without the core noticing. The scenarios drive the host through a small driver the
 * host writes once (`ConformanceAgent`: `events`, `startTurn`/`endTurn`, `step`, `command`,
 * `get`, `callExitTool`, `nextReview`, `steered`, and optionally `restart`; each member's
 * comment says what it must do). Every scenario gets a fresh host from `createHost` and one
 * agent from its `createAgent`; one that needs `restart` resolves `{ skipped }` for a driver
 * without it. `defineConformanceSuite` (vitest, `xstate-plan-mode/testing`; `node:test`,
 * `xstate-plan-mode/testing/node`) makes one test of each; `checkConformance` runs them all.
 *
 * ```ts
 * import { conformanceScenarios } from 'xstate-plan-mode/testing/scenarios'
 *
 * for (const { title, run } of conformanceScenarios({ createHost: () => ({ section: MY_SECTION, createAgent: () => myDriver() }) })) {
 *   test(title, run) // any runner: run() throws when the host breaks the rule
 * }
 * ```
 */
export function conformanceScenarios({ createHost, decisions = 'approve-or-keep' }: ScenarioOptions<ConformanceSuiteOptions>): ConformanceScenario[] {
  /**
   * Runs a scenario on a fresh host and agent; disposes the host afterwards. A scenario that
   * needs `restart` is skipped for a driver without it.
   */
  const scenario =
    (run: (agent: ConformanceAgent, host: ConformanceHost) => Promise<void>, { restart = false } = {}) =>
    async (): Promise<ScenarioResult> => {
      const host = await createHost()
      try {
        const agent = await host.createAgent()
        if (restart && typeof agent.restart !== 'function') return { skipped: 'the driver has no restart()' }
        await run(agent, host)
        return { passed: true }
      } finally {
        await host.dispose?.()
      }
    }
  const scenarios: ConformanceScenario[] = []
  const add = (title: string, run: ConformanceScenario['run']) => void scenarios.push({ title, run })

  /** Enters plan mode between turns and runs a step in it. */
  const inPlanMode = async (agent: ConformanceAgent) => {
    equal(await agent.command(''), { kind: 'success', text: TEXT.on })
    await agent.startTurn()
    await agent.step()
  }

  {
    add(
      'R4: a new agent starts inactive, and its first step carries no section and no notice (R36)',
      scenario(async (agent) => {
        equal(agent.get(), { active: false })
        equal(await agent.step(), { section: '', notices: [] })
        equal(modes(agent), [])
      }),
    )

    add(
      'R10: /plan between turns commits at once; the next step carries the section (R18)',
      scenario(async (agent, host) => {
        equal(await agent.command(''), { kind: 'success', text: TEXT.on })
        equal(modes(agent), [true])
        equal(agent.get(), { active: true })
        await agent.startTurn()
        // R36: nothing was told before the first step; the section itself states the mode.
        equal(await agent.step(), { section: host.section, notices: [] })
      }),
    )

    add(
      'R32: a switch between steps is narrated once, at the next step (R33, R20)',
      scenario(async (agent, host) => {
        await agent.startTurn()
        equal(await agent.step(), { section: '', notices: [] })
        await agent.endTurn()
        equal(await agent.command(''), { kind: 'success', text: TEXT.on })
        await agent.startTurn()
        equal(await agent.step(), { section: host.section, notices: [TEXT.entering] })
        equal(await agent.step(), { section: host.section, notices: [] })
        await agent.endTurn()
        equal(await agent.command('off'), { kind: 'success', text: TEXT.off })
        await agent.startTurn()
        equal(await agent.step(), { section: '', notices: [TEXT.leaving] })
        equal(modes(agent), [true, false])
      }),
    )

    add(
      'R17: during a turn /plan waits for the next step, whose plan/mode lands before anything the host logs for it (R9, R16)',
      scenario(async (agent, host) => {
        await agent.startTurn()
        await agent.step()
        equal(await agent.command(''), { kind: 'success', text: TEXT.entryQueued })
        equal(agent.get(), { active: false, pending: true })
        equal(modes(agent), [])
        const before = agent.events().length
        equal(await agent.step(), { section: host.section, notices: [TEXT.entering] })
        const first = agent.events()[before]
        equal({ type: first?.type, data: first?.data }, { type: 'plan/mode', data: { active: true } })
        equal(agent.get(), { active: true })
      }),
    )

    add(
      'R9: a round trip before the next step is cancelled: nothing is logged or narrated (R32)',
      scenario(async (agent) => {
        await agent.startTurn()
        await agent.step()
        equal(await agent.command(''), { kind: 'success', text: TEXT.entryQueued })
        equal(await agent.command('off'), { kind: 'success', text: TEXT.entryCancelled })
        equal(agent.get(), { active: false })
        equal(await agent.step(), { section: '', notices: [] })
        equal(modes(agent), [])
      }),
    )

    add(
      'R12: a selection still pending when the turn ends applies at the first step of the next turn',
      scenario(async (agent, host) => {
        await agent.startTurn()
        await agent.step()
        await agent.command('')
        await agent.endTurn()
        equal(agent.get(), { active: false, pending: true })
        equal(modes(agent), [])
        await agent.startTurn()
        equal(await agent.step(), { section: host.section, notices: [TEXT.entering] })
        equal(modes(agent), [true])
      }),
    )

    add(
      'R15: a step whose signal is already aborted changes nothing',
      scenario(async (agent) => {
        await agent.startTurn()
        await agent.step()
        await agent.command('')
        const events = agent.events().length
        const controller = new AbortController()
        controller.abort()
        equal(await agent.step({ signal: controller.signal }), { section: '', notices: [] })
        equal(modes(agent), [])
        equal(agent.get(), { active: false, pending: true })
        same(agent.events().slice(events).some((e) => e.type === 'plan/mode'), false)
      }),
    )

    add(
      'R42: exit_plan_mode outside plan mode fails with "exit_plan_mode is only available in plan mode"',
      scenario(async (agent) => {
        await agent.startTurn()
        await agent.step()
        equal(await agent.callExitTool({ plan: PLAN }), { error: TEXT.notInPlanMode })
        equal(reviews(agent), [])
      }),
    )

    add(
      'R47: an approved plan leaves plan mode at the next step, without a notice (R43, R35, R49)',
      scenario(async (agent) => {
        await inPlanMode(agent)
        const call = agent.callExitTool({ plan: PLAN })
        const review = await agent.nextReview()
        equal(review.request.questions, [question(decisions)])
        review.answer(APPROVE)
        equal(await call, { approved: true })
        equal(agent.get(), { active: true, pending: false })
        equal(reviews(agent), [{ outcome: 'approved', title: TITLE, plan: PLAN }])
        equal(await agent.step(), { section: '', notices: [] })
        equal(modes(agent), [true, false])
      }),
    )

    add(
      'R45: keep planning with feedback fails the call with the feedback, and plan mode stays (R49)',
      scenario(async (agent, host) => {
        await inPlanMode(agent)
        const call = agent.callExitTool({ plan: PLAN })
        const review = await agent.nextReview()
        review.answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Split step 2.' }] })
        equal(await call, { error: `${TEXT.keepPlanningFeedback}Split step 2.` })
        equal(reviews(agent), [{ outcome: 'keep-planning', title: TITLE, plan: PLAN, feedback: 'Split step 2.' }])
        equal(await agent.step(), { section: host.section, notices: [] })
        equal(modes(agent), [true])
      }),
    )

    add(
      'R46: a dismissed review tells the model to stop and wait for the user',
      scenario(async (agent) => {
        await inPlanMode(agent)
        const call = agent.callExitTool({ plan: PLAN })
        ;(await agent.nextReview()).dismiss()
        equal(await call, { error: TEXT.dismissed })
        equal(reviews(agent), [{ outcome: 'dismissed', title: TITLE, plan: PLAN }])
        equal(agent.get(), { active: true })
      }),
    )

    add(
      'R100: comments anchored to the plan reach the model in the keep-planning result; the record keeps them',
      scenario(async (agent) => {
        await inPlanMode(agent)
        const call = agent.callExitTool({ plan: PLAN })
        const comments = [{ quote: '2. Store the rows.', text: 'In batches of 1000.' }]
        ;(await agent.nextReview()).answer({ answers: [{ id: 'plan-review', selected: ['Keep planning'], comments }] })
        const feedback = 'Comments on the plan:\n1. On "2. Store the rows.": In batches of 1000.'
        equal(await call, { error: TEXT.keepPlanningFeedback + feedback })
        equal(reviews(agent), [{ outcome: 'keep-planning', title: TITLE, plan: PLAN, feedback, comments }])
        equal(agent.get(), { active: true })
      }),
    )

    if (decisions === 'all') {
      add(
        'R101: Leave plan mode fails the call with its text, is recorded left, and plan mode is left at the next step without a notice',
        scenario(async (agent) => {
          await inPlanMode(agent)
          const call = agent.callExitTool({ plan: PLAN })
          ;(await agent.nextReview()).answer({ answers: [{ id: 'plan-review', selected: ['Leave plan mode'] }] })
          equal(await call, { error: TEXT.left })
          equal(reviews(agent), [{ outcome: 'left', title: TITLE, plan: PLAN }])
          equal(agent.get(), { active: true, pending: false })
          equal(await agent.step(), { section: '', notices: [] })
          equal(modes(agent), [true, false])
        }),
      )

      add(
        'R101: Approve in a fresh context approves, recorded with fresh: true, and plan mode is left at the next step',
        scenario(async (agent) => {
          await inPlanMode(agent)
          const call = agent.callExitTool({ plan: PLAN })
          ;(await agent.nextReview()).answer({ answers: [{ id: 'plan-review', selected: ['Approve in a fresh context'] }] })
          equal(await call, { approved: true })
          equal(reviews(agent), [{ outcome: 'approved', title: TITLE, plan: PLAN, fresh: true }])
          equal(await agent.step(), { section: '', notices: [] })
          equal(modes(agent), [true, false])
        }),
      )
    }

    add(
      'R46: when the call aborts, it fails with the reason and a later answer is ignored',
      scenario(async (agent) => {
        await inPlanMode(agent)
        const controller = new AbortController()
        const call = agent.callExitTool({ plan: PLAN }, { signal: controller.signal })
        const review = await agent.nextReview()
        controller.abort(new Error('the user pressed stop'))
        equal(await call, { error: 'the user pressed stop' })
        same(review.request.signal.aborted, true)
        review.answer(APPROVE)
        await new Promise((resolve) => setTimeout(resolve, 0))
        equal(agent.get(), { active: true })
        equal(reviews(agent), [{ outcome: 'aborted', title: TITLE, plan: PLAN }])
      }),
    )

    add(
      'R48: /plan off during a review closes it first, then leaves plan mode',
      scenario(async (agent) => {
        await inPlanMode(agent)
        await agent.endTurn()
        const call = agent.callExitTool({ plan: PLAN })
        const review = await agent.nextReview()
        equal(await agent.command('off'), { kind: 'success', text: TEXT.off })
        equal(await call, { error: TEXT.superseded })
        same(review.request.signal.aborted, true)
        const planEvents = agent
          .events()
          .filter((e) => e.type === 'plan/review' || e.type === 'plan/mode')
          .map(({ type, data }) => ({ type, data }))
        equal(planEvents, [
          { type: 'plan/mode', data: { active: true } },
          { type: 'plan/review', data: { outcome: 'superseded', title: TITLE, plan: PLAN } },
          { type: 'plan/mode', data: { active: false } },
        ])
      }),
    )

    add(
      'R56: /plan with a message enters plan mode and steers the message to the agent',
      scenario(async (agent) => {
        equal(await agent.command('  draft the migration '), { kind: 'success', text: TEXT.on })
        const steered = agent.steered()
        same(steered.length, 1)
        equal(steered[0]!.content, [{ type: 'text', text: 'draft the migration' }])
        equal(steered[0]!.source, { kind: 'user' })
      }),
    )

    add(
      'R64: an approved exit survives a restart and is carried out silently (R31)',
      scenario(async (agent) => {
        await inPlanMode(agent)
        const call = agent.callExitTool({ plan: PLAN })
        ;(await agent.nextReview()).answer(APPROVE)
        equal(await call, { approved: true })
        const restarted = await agent.restart!()
        equal(restarted.get(), { active: true, pending: false })
        equal(await restarted.step(), { section: '', notices: [] })
        equal(modes(restarted), [true, false])
      }, { restart: true }),
    )

    add(
      "R64: a /plan made after a turn's last step survives a restart and is narrated at the next step (R31)",
      scenario(async (agent, host) => {
        await agent.startTurn()
        await agent.step()
        equal(await agent.command(''), { kind: 'success', text: TEXT.entryQueued })
        await agent.endTurn()
        const restarted = await agent.restart!()
        equal(restarted.get(), { active: false, pending: true })
        await restarted.startTurn()
        equal(await restarted.step(), { section: host.section, notices: [TEXT.entering] })
      }, { restart: true }),
    )
  }
  return scenarios
}

/**
 * One agent of a host whose service has durable reviews (`review: 'durable'`, R78–R81), driven
 * the way the host drives it: a `ConformanceAgent` without a review channel (no `nextReview`),
 * plus the review UI's two calls, and a `restart` that every durable scenario uses (a new
 * process over the same log: the review lives in the log, not in the process).
 */
export interface DurableConformanceAgent extends Omit<ConformanceAgent, 'nextReview' | 'restart'> {
  /**
   * `PlanMode.openReview` for this agent (R79): the review the host's UI renders, or `null`.
   */
  openReview(): { reviewId: string; title: string; plan: string; version: number } | null
  /**
   * The user answers in the host's review UI, perhaps in another request or process:
   * `PlanMode.answerReview` (with `{ toldInResult: true }` for a told-in-result host, R81).
   * Resolves the outcome, or `{ error: <message> }` for a refusal (R80).
   */
  answerReview(reviewId: string, answer: { answers: { id: string; selected: string[]; custom?: string; comments?: { quote: string; text: string }[] }[] }): Promise<'approved' | 'keep-planning' | 'left' | { error: string }>
  /**
   * A new process: stop serving the agent here (dispose the service) and return a driver for the
   * same agent served by a new service over the same stored log, as the host's next request on
   * another instance would.
   */
  restart(): Promise<DurableConformanceAgent>
  /**
   * Optional: the user dismisses the review in the host's UI to speak instead, perhaps in another
   * process (R136): `PlanMode.dismissReview` (with `{ toldInResult: true }` for a told-in-result
   * host). Resolves `'dismissed'`, or `{ error: <message> }` for a refusal. Without it the
   * dismissal scenario is skipped.
   */
  dismissReview?(reviewId: string): Promise<'dismissed' | { error: string }>
  /**
   * Told-in-result hosts only (`defineDurableReviewSuite({ toldInResult: true })`, R81, R135): the
   * result the model gets for the exit call the host keeps waiting, once its review is closed.
   * Resume the waiting call as the host does (LangGraph: the graph's `Command({ resume })`; an
   * SDK: the approved or denied tool call) and resolve what the model reads as the call's result:
   * `{ isError, text }`, the fields of `PLAN_MODE_TEXTS.review.toldInResult`. The kit calls it in
   * a later process than the call (after `restart()`), once, after the review was answered.
   */
  callResult?(): Promise<{ isError: boolean; text: string }>
}

/** A host under test whose service has durable reviews. */
export interface DurableConformanceHost {
  /** The `section` (`PlanModeOptions`) the host configured. */
  readonly section: string
  /** A new agent over an empty session log, with its driver. */
  createAgent(): DurableConformanceAgent | Promise<DurableConformanceAgent>
  /** Called after each scenario. */
  dispose?(): void | Promise<void>
}

/** Options of `defineDurableReviewSuite`, `durableReviewScenarios` and `checkDurableReviews` (which need no `name`). */
export interface DurableReviewSuiteOptions {
  /** The suite's name (a `describe` title, or the prefix of `checkDurableReviews`'s error). */
  name: string
  /** A fresh host per scenario. */
  createHost(): DurableConformanceHost | Promise<DurableConformanceHost>
  /**
   * How the host tells the model a review's outcome (R81). `false` (the default): the exit call
   * resolves once the request is recorded, the model is given `exitTool.submittedText`, and the
   * first step after the answer tells the outcome as a notice. `true`: the host keeps the exit call
   * waiting (LangGraph's `interrupt()`, a framework's tool approval) and tells the outcome in the
   * call's result (R135): its review UI answers with `{ toldInResult: true }`, the driver's
   * `callResult()` gives the result the model reads, and no step tells it again.
   */
  toldInResult?: boolean
}

/**
 * The durable-review scenarios (R78–R81), plain async functions named by rule, for a host whose
 * plan reviews outlive the process: a serverless or load-balanced web app where the exit call,
 * the user's answer and the step that carries the plan out may each run in another process; with
 * `toldInResult: true`, a host that keeps the exit call waiting and tells the outcome in its
 * result (LangGraph's `interrupt()`, R135). Every scenario gets a fresh host and one agent, and
 * restarts it between the moments a stateless host would. `defineDurableReviewSuite` makes one
 * test of each; `checkDurableReviews` runs them all.
 */
export function durableReviewScenarios({ createHost, toldInResult = false }: ScenarioOptions<DurableReviewSuiteOptions>): ConformanceScenario[] {
  const scenario =
    (run: (agent: DurableConformanceAgent, host: DurableConformanceHost) => Promise<void>, { dismissal = false } = {}) =>
    async (): Promise<ScenarioResult> => {
    const host = await createHost()
    try {
      const agent = await host.createAgent()
      if (toldInResult && typeof agent.callResult !== 'function') {
        throw new TypeError('the durable review scenarios told in the result ({ toldInResult: true }) need a driver with callResult()')
      }
      if (dismissal && typeof agent.dismissReview !== 'function') return { skipped: 'the driver has no dismissReview()' }
      await run(agent, host)
      return { passed: true }
    } finally {
      await host.dispose?.()
    }
  }
  const scenarios: ConformanceScenario[] = []
  const add = (title: string, run: ConformanceScenario['run']) => void scenarios.push({ title, run })

  /**
   * The outcome of a closed review reaches the model (R81): told in the waiting call's result
   * (`callResult`, R135) with `text`, and then at no step; or, without `toldInResult`, at the next
   * step as a notice with the same text (an approval's notice is R81's own). Returns the notices
   * of that step.
   */
  const told = async (agent: DurableConformanceAgent, expected: { isError: boolean; text: string; notice: string }, section: string) => {
    await agent.startTurn()
    if (toldInResult) {
      const { isError, text } = await agent.callResult!()
      equal({ isError, text }, { isError: expected.isError, text: expected.text })
      equal(await agent.step(), { section, notices: [] })
    } else {
      equal(await agent.step(), { section, notices: [expected.notice] })
    }
  }

  /** The closing records carry `toldInResult: true` exactly when the host tells outcomes in the result (R81). */
  const closedAs = (agent: DurableConformanceAgent, reviewId: string) =>
    reviews(agent as unknown as ConformanceAgent)
      .filter((data) => (data as { reviewId?: unknown }).reviewId === reviewId && (data as { outcome?: unknown }).outcome !== 'requested')
      .map((data) => (data as { toldInResult?: unknown }).toldInResult === true)

  /** Enters plan mode between turns, runs a step in it, and has the model present the plan. */
  const submitted = async (agent: DurableConformanceAgent): Promise<string> => {
    equal(await agent.command(''), { kind: 'success', text: TEXT.on })
    await agent.startTurn()
    await agent.step()
    const result = await agent.callExitTool({ plan: PLAN })
    match(result, { submitted: true })
    await agent.endTurn()
    return (result as { reviewId: string }).reviewId
  }

  /** The durable review records in the log: outcome and id. */
  const records = (agent: DurableConformanceAgent) =>
    reviews(agent as unknown as ConformanceAgent).map((data) => {
      const { outcome, reviewId } = data as { outcome: string; reviewId?: string }
      return { outcome, reviewId }
    })

  {
    add(
      'R79: the exit call logs the request and resolves submitted; the review is open in a new process',
      scenario(async (agent) => {
        const reviewId = await submitted(agent)
        equal(records(agent), [{ outcome: 'requested', reviewId }])
        const request = agent.events().find((e) => e.type === 'plan/review')!.data
        match(request, { outcome: 'requested', reviewId, title: TITLE, plan: PLAN })
        const next = await agent.restart()
        match(next.openReview(), { reviewId, title: TITLE, plan: PLAN })
        equal(next.get(), { active: true })
      }),
    )

    add(
      toldInResult
        ? 'R80: an approval in a second process is told in the waiting call’s result in a third, and at no step (R81, R135, R47)'
        : 'R80: an approval in a second process is carried out by a third, told once at its next step (R81, R47)',
      scenario(async (agent) => {
        const reviewId = await submitted(agent)
        const answering = await agent.restart()
        same(await answering.answerReview(reviewId, APPROVE), 'approved')
        isNull(answering.openReview())
        const carrying = await answering.restart()
        equal(carrying.get(), { active: true, pending: false })
        await told(carrying, { isError: false, text: TEXT.approvedResult, notice: TEXT.approvedNews }, '')
        equal(await carrying.step(), { section: '', notices: [] })
        equal(modes(carrying as unknown as ConformanceAgent), [true, false])
        equal(records(carrying), [
          { outcome: 'requested', reviewId },
          { outcome: 'approved', reviewId },
        ])
        equal(closedAs(carrying, reviewId), [toldInResult])
      }),
    )

    add(
      toldInResult
        ? 'R80: keep planning with feedback reaches the model in the waiting call’s result, and the review closes (R45, R81, R135)'
        : 'R80: keep planning with feedback reaches the model at the next step, and the review closes (R45, R81)',
      scenario(async (agent, host) => {
        const reviewId = await submitted(agent)
        const answering = await agent.restart()
        const feedback = { answers: [{ id: 'plan-review', selected: ['Keep planning'], custom: 'Use SQLite.' }] }
        same(await answering.answerReview(reviewId, feedback), 'keep-planning')
        const next = await answering.restart()
        isNull(next.openReview())
        const text = `${TEXT.keepPlanningFeedback}Use SQLite.`
        await told(next, { isError: true, text, notice: text }, host.section)
        equal(next.get(), { active: true })
        equal(closedAs(next, reviewId), [toldInResult])
      }),
    )

    add(
      'R80: a review is answered once; a second answer is refused and changes nothing',
      scenario(async (agent, host) => {
        const reviewId = await submitted(agent)
        const keep = { answers: [{ id: 'plan-review', selected: ['Keep planning'] }] }
        same(await agent.answerReview(reviewId, keep), 'keep-planning')
        const other = await agent.restart()
        equal(await other.answerReview(reviewId, APPROVE), {
          error: `plan review ${reviewId} is already closed (keep-planning); nothing was changed`,
        })
        equal(await other.answerReview('no-such-review', APPROVE), {
          error: 'no plan review no-such-review is open for this agent; nothing was changed',
        })
        equal(other.get(), { active: true })
        await told(other, { isError: true, text: TEXT.keepPlanning, notice: TEXT.keepPlanning }, host.section)
      }),
    )

    add(
      'R48: /plan off while a durable review is open closes it as superseded, before the switch (R80, R81)',
      scenario(async (agent) => {
        const reviewId = await submitted(agent)
        const next = await agent.restart()
        equal(await next.command('off'), { kind: 'success', text: TEXT.off })
        isNull(next.openReview())
        equal(records(next), [
          { outcome: 'requested', reviewId },
          { outcome: 'superseded', reviewId },
        ])
        await next.startTurn()
        equal(await next.step(), { section: '', notices: [TEXT.superseded, TEXT.leaving] })
      }),
    )

    add(
      toldInResult
        ? 'R136: the user’s dismissal in a second process is recorded as the user’s; plan mode stays, and the waiting call gets R46’s text (R135)'
        : 'R136: the user’s dismissal in a second process is recorded as the user’s; plan mode stays, and no step tells it (R81)',
      scenario(async (agent, host) => {
        const reviewId = await submitted(agent)
        const dismissing = await agent.restart()
        same(await dismissing.dismissReview!(reviewId), 'dismissed')
        isNull(dismissing.openReview())
        const record = reviews(dismissing as unknown as ConformanceAgent).at(-1) as Record<string, unknown>
        equal({ outcome: record.outcome, reviewId: record.reviewId, by: record.by }, { outcome: 'dismissed', reviewId, by: undefined })
        const next = await dismissing.restart()
        equal(next.get(), { active: true })
        await next.startTurn()
        if (toldInResult) {
          const { isError, text } = await next.callResult!()
          equal({ isError, text }, { isError: true, text: TEXT.dismissed })
        }
        equal(await next.step(), { section: host.section, notices: [] })
        equal(closedAs(next, reviewId), [toldInResult])
      }, { dismissal: true }),
    )

    add(
      'R42: a second exit call while a durable review is open fails as check 6, in any process (R79)',
      scenario(async (agent) => {
        await submitted(agent)
        const next = await agent.restart()
        await next.startTurn()
        await next.step()
        equal(await next.callExitTool({ plan: PLAN }), { error: TEXT.alreadyOpen })
      }),
    )
  }
  return scenarios
}
