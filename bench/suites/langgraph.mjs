/**
 * Suite `langgraph`: the side-by-side a user would weigh, reported and never a target. The same
 * agent steps and review round trip, on one throwaway PostgreSQL cluster, through one kind of
 * counted `pg.Pool` (bench/pg-pool.mjs), on two stacks:
 * - plan mode: the README's setup (the store's session log, pending store and checkpoints; durable
 *   reviews), the host logging each step's events in the session log;
 * - LangGraph.js with its PostgreSQL checkpointer (`PostgresSaver`): a `MessagesAnnotation` graph,
 *   `agent` → `tools` → `agent` …, a scripted model in the `agent` node.
 * The same messages on both: per step the model's text and one `read_file` call, then the tool's
 * result; a turn is a user message, 10 such steps and a final answer. LangGraph runs with
 * `durability: 'sync'` (each step's checkpoint written before the next step starts: what an
 * awaited append gives plan mode) and with its default `'async'`.
 * - step: a quiet agent step (no mode change) on a fresh thread/session growing to
 *   `STEPS_PER_RUN` steps, timed from one model call to the next; its statements and the bytes
 *   its pool's sockets wrote are counted over the run and divided by the steps, and so is the growth
 *   of the store's tables (`pg_total_relation_size`, indexes and TOAST included);
 * - review: one review round trip from the exit call to its recorded approval, on a fresh
 *   session/thread: `exitTool.execute` + `answerReview` (durable) against a graph whose `review`
 *   node pauses with `interrupt()` and is resumed with `Command({ resume })`;
 * - resume after 1e4 steps: a session/thread holding 1,000 turns of 10 steps (plan mode: the rows
 *   written in one statement, then the last turn appended live so the service saves its
 *   checkpoint, R76; LangGraph: the whole history handed to one run, as a thread of 1e4 steps holds
 *   it in its latest checkpoint), then, on a new store / checkpointer, the time until the agent could
 *   take its next step: `openSession` + `get` against `getState` (10 and 2 samples, plan mode's
 *   all before LangGraph's thread is built: its heap would weigh on plan mode's samples); then
 *   quiet steps on it (plan mode: five, their median; LangGraph: one).
 */
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages'
import { Command, END, interrupt, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph'
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres'
import pg from 'pg'
import { startTestPostgres } from '../../apps/shared/local-postgres.ts'
import { interleave, LIB_URL, nowNs, QUICK, stats } from '../harness.mjs'
import { countedPool } from '../pg-pool.mjs'
import { SECTION } from '../steps.mjs'

const STEPS_PER_RUN = QUICK ? 30 : 100
const STEP_ROUNDS = QUICK ? 2 : 5
const REVIEW_ROUNDS = QUICK ? 2 : 5
const REVIEW_SAMPLES = QUICK ? 10 : 40
const RESUME_STEPS = QUICK ? 1000 : 10_000
/** Resumes per side: LangGraph's take seconds each at 1e4 steps. */
const RESUME_SAMPLES = { planMode: QUICK ? 4 : 10, langgraph: 2 }
const STEPS_PER_TURN = 10
/** Plan mode's quiet steps on the long session (LangGraph's one takes seconds: it is one). */
const LONG_STEPS = 5

const PLAN = '# Ship the importer\n\n1. Parse the CSV.\n2. Store the rows.'
const APPROVE = { answers: [{ id: 'plan-review', selected: ['Approve'] }] }
const TEXT = 'Let me look at the config loader first; it reads the file twice.'
const RESULT = `export function loadConfig(path) {\n  const text = readFileSync(path, 'utf8')\n  return { ...defaults, ...JSON.parse(text) }\n}\n`.repeat(2)
const USER = 'The test suite fails on CI; find out why and fix it.'
const FINAL = 'Done. The suite passes now.'

/** A step's events as plan mode's host logs them (R17: the request header, then the messages). */
function stepEvents(step) {
  const toolCallId = `call-${step}`
  return [
    { type: 'request/header', data: { step } },
    {
      type: 'message',
      data: { role: 'assistant', content: [{ type: 'text', text: TEXT }, { type: 'tool-call', toolCallId, toolName: 'read_file', input: { path: 'src/config.ts' } }] },
    },
    { type: 'message', data: { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'read_file', output: { type: 'text', value: RESULT } }] } },
  ]
}

/** The same step as LangGraph messages. */
function stepMessages(step) {
  const id = `call-${step}`
  return [new AIMessage({ content: TEXT, tool_calls: [{ id, name: 'read_file', args: { path: 'src/config.ts' } }] }), new ToolMessage({ content: RESULT, tool_call_id: id })]
}

/** The rows' growth of some tables, in bytes (indexes and TOAST included). */
async function tablesSize(pool, tables) {
  const { rows } = await pool.query(`SELECT COALESCE(sum(pg_total_relation_size(t::regclass)), 0)::bigint AS bytes FROM unnest($1::text[]) t`, [tables])
  return Number(rows[0].bytes)
}

/** What one run of steps cost: per-step times, and statements, bytes sent and table growth per step. */
function perStep(times, steps, statements, bytes, stored) {
  return { times, statements: statements / steps, bytes: bytes / steps, stored: stored / steps }
}

/** Runs the suite. */
export async function run(lib) {
  const pgAdapter = await import(new URL('./postgres.js', LIB_URL).href)
  const server = await startTestPostgres()
  const config = server.config
  const ends = []
  try {
    // ---- plan mode, the README's setup ----
    const ours = countedPool(config, 1)
    ends.push(() => ours.pool.end())
    const store = pgAdapter.createPostgresPlanStore({
      db: ours.pool,
      listen: pgAdapter.pgListen(async () => {
        const client = new pg.Client(config)
        await client.connect()
        return client
      }),
      prefix: 'pm_',
    })
    await store.migrate()
    ends.push(() => store.close())
    const options = { section: SECTION, review: 'durable', pendingStore: store.pendingStore, checkpoints: { store: store.checkpoints }, logger: { warn: () => {} } }
    const service = lib.createPlanMode(options)
    ends.push(() => service.dispose())
    const ourTables = ['pm_events', 'pm_pending', 'pm_checkpoints', 'pm_turns']
    let sessions = 0

    /** One quiet step of plan mode's host: the boundary, the request's section, the step's events. */
    const ourStep = async (agent, step) => {
      await service.stepBoundary(agent)
      service.section(agent)
      for (const { type, data } of stepEvents(step)) await agent.session.append(type, data)
    }
    const ourRun = async (steps) => {
      const agent = { id: `steps-${++sessions}`, session: await store.openSession(`steps-${sessions}`) }
      await agent.session.append('turn/start', {})
      await agent.session.append('message', { role: 'user', content: [{ type: 'text', text: USER }] })
      service.get(agent)
      await ours.settled()
      const [statements, bytes, size] = [ours.statements(), ours.bytes(), await tablesSize(ours.pool, ourTables)]
      const times = []
      for (let step = 0; step < steps; step++) {
        const t = nowNs()
        await ourStep(agent, step)
        times.push(nowNs() - t)
      }
      times.shift() // the run's first step follows the forced collection between runs: untimed
      await ours.settled()
      const result = perStep(times, steps, ours.statements() - statements, ours.bytes() - bytes, 0)
      result.stored = ((await tablesSize(ours.pool, ourTables)) - size) / steps
      service.detach(agent)
      await agent.session.close()
      return result
    }

    // ---- LangGraph.js with PostgresSaver ----
    const theirs = countedPool(config, 1)
    ends.push(() => theirs.pool.end())
    const saver = new PostgresSaver(theirs.pool)
    await saver.setup()
    const theirTables = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']
    /** The scripted model: the steps left in the current run, then the final answer. */
    let stepsLeft = 0
    let stepNumber = 0
    let modelCalls = []
    const graph = (checkpointer) =>
      new StateGraph(MessagesAnnotation)
        .addNode('agent', () => {
          modelCalls.push({ at: nowNs(), statements: theirs.statements(), bytes: theirs.bytes() })
          if (stepsLeft-- <= 0) return { messages: [new AIMessage({ content: FINAL })] }
          return { messages: [stepMessages(stepNumber++)[0]] }
        })
        .addNode('tools', ({ messages }) => ({
          messages: messages.at(-1).tool_calls.map((call) => new ToolMessage({ content: RESULT, tool_call_id: call.id })),
        }))
        .addEdge(START, 'agent')
        .addConditionalEdges('agent', ({ messages }) => (messages.at(-1).tool_calls?.length ? 'tools' : END))
        .addEdge('tools', 'agent')
        .compile({ checkpointer })
    const steps = graph(saver)
    let threads = 0
    const theirRun = async (count, durability) => {
      const thread = { configurable: { thread_id: `steps-${++threads}` }, durability, recursionLimit: 2 * count + 10 }
      await theirs.settled()
      const [statements, bytes, size] = [theirs.statements(), theirs.bytes(), await tablesSize(theirs.pool, theirTables)]
      stepsLeft = count
      modelCalls = []
      await steps.invoke({ messages: [new HumanMessage(USER)] }, thread)
      await theirs.settled()
      // From one model call to the next: the model's step, its checkpoint, the tool's, its checkpoint
      // (with 'async' a checkpoint may land during the next step: the run's totals are divided).
      const times = modelCalls.slice(2).map((call, i) => call.at - modelCalls[i + 1].at) // the first step untimed, as plan mode's
      const result = perStep(times, count, theirs.statements() - statements, theirs.bytes() - bytes, 0)
      result.stored = ((await tablesSize(theirs.pool, theirTables)) - size) / count
      return result
    }

    // ---- steps: runs alternate, the order rotating every round ----
    const stepSides = { planMode: () => ourRun(STEPS_PER_RUN), langgraphSync: () => theirRun(STEPS_PER_RUN, 'sync'), langgraphAsync: () => theirRun(STEPS_PER_RUN, 'async') }
    for (const side of Object.values(stepSides)) await side() // warm-up: connections, JIT, prepared statements
    const stepRuns = Object.fromEntries(Object.keys(stepSides).map((name) => [name, []]))
    const names = Object.keys(stepSides)
    for (let round = 0; round < STEP_ROUNDS; round++) {
      for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
        globalThis.gc?.() // between runs: one side's garbage is not collected on the other's time (each run's first step is not timed)
        stepRuns[name].push(await stepSides[name]())
      }
    }
    const summarize = (runs) => ({
      time: stats(runs.flatMap((r) => r.times)),
      statements: runs.reduce((sum, r) => sum + r.statements, 0) / runs.length,
      bytes: runs.reduce((sum, r) => sum + r.bytes, 0) / runs.length,
      stored: runs.reduce((sum, r) => sum + r.stored, 0) / runs.length,
    })
    const step = Object.fromEntries(names.map((name) => [name, summarize(stepRuns[name])]))

    // ---- review round trip ----
    const review = new StateGraph(MessagesAnnotation)
      .addNode('review', ({ messages }) => {
        const call = messages.at(-1).tool_calls[0]
        const answer = interrupt({ plan: call.args.plan })
        return { messages: [new ToolMessage({ content: answer.approved ? 'The user approved the plan.' : 'Keep planning.', tool_call_id: call.id })] }
      })
      .addEdge(START, 'review')
      .addEdge('review', END)
      .compile({ checkpointer: saver })
    let reviewAgent = null
    const reviewSides = {
      planMode: {
        before: async () => {
          const id = `review-${++sessions}`
          reviewAgent = { id, session: await store.openSession(id) }
          await reviewAgent.session.append('plan/mode', { active: true })
          await reviewAgent.session.append('turn/start', {})
          service.get(reviewAgent)
          await ours.settled()
        },
        run: async () => {
          const { reviewId } = await service.exitTool.execute({ plan: PLAN }, { agent: reviewAgent })
          await service.answerReview(reviewAgent, reviewId, APPROVE)
        },
        after: async () => {
          const state = service.get(reviewAgent)
          if (state.active !== true || state.pending !== false) throw new Error(`langgraph suite: the review left ${JSON.stringify(state)}`)
          service.detach(reviewAgent)
          await reviewAgent.session.close()
        },
        samples: REVIEW_SAMPLES,
      },
      langgraph: {
        run: async () => {
          const thread = { configurable: { thread_id: `review-${++threads}` }, durability: 'sync' }
          const call = new AIMessage({ content: '', tool_calls: [{ id: `exit-${threads}`, name: 'exit_plan_mode', args: { plan: PLAN } }] })
          const paused = await review.invoke({ messages: [call] }, thread)
          if (!paused.__interrupt__?.length) throw new Error('langgraph suite: the review did not pause')
          const done = await review.invoke(new Command({ resume: { approved: true } }), thread)
          if (done.messages.at(-1).content !== 'The user approved the plan.') throw new Error('langgraph suite: the review did not record the approval')
        },
        samples: REVIEW_SAMPLES,
      },
    }
    for (let i = 0; i < 10; i++) for (const side of Object.values(reviewSides)) await side.before?.(), await side.run(), await side.after?.()
    const reviewStats = await interleave(reviewSides, { rounds: REVIEW_ROUNDS })

    // ---- resume after 1e4 steps ----
    const turns = RESUME_STEPS / STEPS_PER_TURN
    const turnEvents = (turn) => [
      { type: 'turn/start', data: {} },
      { type: 'message', data: { role: 'user', content: [{ type: 'text', text: USER }] } },
      ...Array.from({ length: STEPS_PER_TURN }, (_, i) => stepEvents(turn * STEPS_PER_TURN + i)).flat(),
      { type: 'message', data: { role: 'assistant', content: [{ type: 'text', text: FINAL }] } },
      { type: 'turn/end', data: {} },
    ]
    const longId = 'long'
    const written = Array.from({ length: turns - 1 }, (_, turn) => turnEvents(turn)).flat()
    await ours.pool.query(
      `INSERT INTO pm_events (session, seq, type, data) SELECT $1, e.ord, e.value ->> 'type', e.value -> 'data' FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY e(value, ord)`,
      [longId, JSON.stringify(written)],
    )
    {
      // The last turn live: the service takes its turn/end and saves the checkpoint (R76); a turn stays open.
      const agent = { id: longId, session: await store.openSession(longId) }
      service.get(agent)
      for (const { type, data } of turnEvents(turns - 1)) await agent.session.append(type, data)
      await agent.session.append('turn/start', {})
      await agent.session.append('message', { role: 'user', content: [{ type: 'text', text: USER }] })
      await ours.settled()
      service.detach(agent)
      await agent.session.close()
    }
    const ourEvents = Number((await ours.pool.query('SELECT count(*) AS n FROM pm_events WHERE session = $1', [longId])).rows[0].n)
    const checkpointSeq = Number((await ours.pool.query('SELECT seq FROM pm_checkpoints WHERE session = $1', [longId])).rows[0]?.seq ?? 0)
    // Plan mode first, then LangGraph: a LangGraph thread of 1e4 steps keeps hundreds of MB alive in
    // this process while it is measured, and plan mode's samples taken beside that heap would pay
    // for its collection. No sample follows a forced collection: the operation right after one
    // runs several times slower (measured: a 1.7 ms step took 3 to 21 ms).
    const resumeTimes = { planMode: [], langgraph: [] }
    let loaded = 0
    for (let i = 0; i < RESUME_SAMPLES.planMode; i++) {
      const t = nowNs()
      // A new instance: its own store on the pool (nothing cached), the service attaching the agent.
      const fresh = pgAdapter.createPostgresPlanStore({ db: ours.pool, listen: async () => async () => {}, prefix: 'pm_' })
      const restarted = lib.createPlanMode({ ...options, pendingStore: fresh.pendingStore, checkpoints: { store: fresh.checkpoints } })
      const agent = { id: longId, session: await fresh.openSession(longId) }
      restarted.get(agent)
      restarted.section(agent)
      resumeTimes.planMode.push(nowNs() - t)
      loaded = agent.session.events.length
      await restarted.dispose()
      await fresh.close()
    }
    // Quiet steps on the long session: the median of five (one sample on a busy machine may be a
    // preemption), their mean statements and bytes.
    const longAgent = { id: longId, session: await store.openSession(longId) }
    service.get(longAgent)
    const longSteps = []
    for (let i = 0; i < LONG_STEPS; i++) {
      await ours.settled()
      const [s0, b0] = [ours.statements(), ours.bytes()]
      const t = nowNs()
      await ourStep(longAgent, RESUME_STEPS + i)
      const time = nowNs() - t
      await ours.settled()
      longSteps.push({ time, statements: ours.statements() - s0, bytes: ours.bytes() - b0 })
    }
    const mean = (key) => longSteps.reduce((sum, x) => sum + x[key], 0) / LONG_STEPS
    const ourLongStep = { time: stats(longSteps.map((x) => x.time)).median, statements: mean('statements'), bytes: mean('bytes'), samples: LONG_STEPS }
    service.detach(longAgent)
    await longAgent.session.close()

    // LangGraph: the thread's history in one run (input, then the model's final answer).
    const history = []
    for (let turn = 0; turn < turns; turn++) {
      history.push(new HumanMessage(USER))
      for (let i = 0; i < STEPS_PER_TURN; i++) history.push(...stepMessages(turn * STEPS_PER_TURN + i))
      history.push(new AIMessage({ content: FINAL }))
    }
    history.push(new HumanMessage(USER))
    const longThread = { configurable: { thread_id: 'long' }, durability: 'sync' }
    stepsLeft = 0
    await steps.invoke({ messages: history }, longThread)
    history.length = 0
    const theirMessages = (await steps.getState(longThread)).values.messages.length
    for (let i = 0; i < RESUME_SAMPLES.langgraph; i++) {
      const t = nowNs()
      // A new checkpointer on the pool (nothing cached), the graph reading the thread's state.
      const state = await graph(new PostgresSaver(theirs.pool)).getState(longThread)
      resumeTimes.langgraph.push(nowNs() - t)
      if (state.values.messages.length !== theirMessages) throw new Error('langgraph suite: the resumed thread lost messages')
    }
    // One quiet step on the long thread (it takes seconds: one).
    await theirs.settled()
    stepsLeft = 1
    modelCalls = []
    const t = nowNs()
    await steps.invoke({ messages: [] }, longThread)
    // The step: from its model call to the next one (durability 'sync': its checkpoints are written by then).
    const [call, next] = modelCalls
    const theirLongStep = { time: next.at - call.at, statements: next.statements - call.statements, bytes: next.bytes - call.bytes, wholeRun: nowNs() - t }
    await theirs.settled()

    const graphSide = await inGraph(config, ends)

    return {
      versions: await versions(),
      inGraph: graphSide,
      resultBytes: Buffer.byteLength(RESULT),
      stepsPerRun: STEPS_PER_RUN,
      stepRounds: STEP_ROUNDS,
      step,
      reviewRounds: REVIEW_ROUNDS,
      reviewSamples: REVIEW_SAMPLES,
      review: reviewStats,
      resume: {
        steps: RESUME_STEPS,
        events: ourEvents,
        checkpointSeq,
        loaded,
        messages: theirMessages,
        planMode: stats(resumeTimes.planMode),
        langgraph: stats(resumeTimes.langgraph),
        planModeStep: ourLongStep,
        langgraphStep: theirLongStep,
      },
    }
  } finally {
    for (const end of ends.reverse()) await end().catch(() => {})
    await server.destroy()
  }
}

/**
 * Inside LangGraph's own graph (xstate-plan-mode/langgraph): the same agent steps and the same long
 * thread, on the same PostgresSaver, with and without plan mode. Without: `MessagesAnnotation`,
 * `agent` → `tools` → `agent`. With: the adapter's state (its `planLog` channel: plan mode's log in
 * the checkpoint), `plan_boundary` → `agent` → `plan_tools` → `plan_boundary` …, durable reviews.
 * Durability 'sync' on both. Reported: a quiet step's time (model call to model call), statements
 * and bytes sent per step; the resume of a thread of `RESUME_STEPS` steps (a new saver and graph:
 * `getState`, plus with plan mode the agent's attach from the thread's `planLog`) and one quiet step
 * on it.
 */
export async function inGraph(config, ends) {
  const { tool } = await import('@langchain/core/tools')
  const lib = await import(LIB_URL)
  const adapter = await import(new URL('./langgraph.js', LIB_URL).href)
  const counted = countedPool(config, 1)
  ends.push(() => counted.pool.end())
  const saver = new PostgresSaver(counted.pool)
  await saver.setup()
  let stepsLeft = 0
  let stepNumber = 0
  let modelCalls = []
  const model = () => {
    modelCalls.push({ at: nowNs(), statements: counted.statements(), bytes: counted.bytes() })
    if (stepsLeft-- <= 0) return { messages: [new AIMessage({ content: FINAL })] }
    return { messages: [stepMessages(stepNumber++)[0]] }
  }
  const readFile = tool(async () => RESULT, { name: 'read_file', description: 'Read a file.', schema: { type: 'object', properties: { path: { type: 'string' } } } })
  const plain = (checkpointer) =>
    new StateGraph(MessagesAnnotation)
      .addNode('agent', model)
      .addNode('tools', ({ messages }) => ({ messages: messages.at(-1).tool_calls.map((call) => new ToolMessage({ content: RESULT, tool_call_id: call.id })) }))
      .addEdge(START, 'agent')
      .addConditionalEdges('agent', ({ messages }) => (messages.at(-1).tool_calls?.length ? 'tools' : END))
      .addEdge('tools', 'agent')
      .compile({ checkpointer })
  const services = []
  ends.push(() => Promise.all(services.map((service) => service.dispose())))
  const planned = async (checkpointer) => {
    const service = lib.createPlanMode({ section: SECTION, review: 'durable', logger: { warn: () => {} } })
    services.push(service)
    const lg = await adapter.createLangGraphPlanMode({ planMode: service, tools: [readFile] })
    // The adapter's standard graph (R165), the model node named as in the graph without plan mode.
    const graph = lg.graph(model, { modelNode: 'agent' }).compile({ checkpointer })
    return { service, lg, graph }
  }
  const sides = { withoutPlanMode: plain(saver), withPlanMode: (await planned(saver)).graph }
  let threads = 0
  const stepRun = async (graph, count) => {
    const thread = { configurable: { thread_id: `in-graph-${++threads}` }, durability: 'sync', recursionLimit: 4 * count + 10 }
    await counted.settled()
    const [statements, bytes] = [counted.statements(), counted.bytes()]
    stepsLeft = count
    modelCalls = []
    await graph.invoke({ messages: [new HumanMessage(USER)] }, thread)
    await counted.settled()
    const times = modelCalls.slice(2).map((call, i) => call.at - modelCalls[i + 1].at)
    return perStep(times, count, counted.statements() - statements, counted.bytes() - bytes, 0)
  }
  for (const graph of Object.values(sides)) await stepRun(graph, STEPS_PER_RUN) // warm-up
  const runs = { withoutPlanMode: [], withPlanMode: [] }
  const names = Object.keys(sides)
  for (let round = 0; round < STEP_ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      globalThis.gc?.()
      runs[name].push(await stepRun(sides[name], STEPS_PER_RUN))
    }
  }
  const step = Object.fromEntries(
    names.map((name) => [
      name,
      {
        time: stats(runs[name].flatMap((r) => r.times)),
        statements: runs[name].reduce((sum, r) => sum + r.statements, 0) / runs[name].length,
        bytes: runs[name].reduce((sum, r) => sum + r.bytes, 0) / runs[name].length,
      },
    ]),
  )

  // Resume: a thread of RESUME_STEPS steps, its history given in one run (plan mode's log with it:
  // per turn turn/start, a request/header per step, turn/end), then read by a new saver and graph.
  const turns = RESUME_STEPS / STEPS_PER_TURN
  const history = []
  const planLog = []
  const event = (type, data) => planLog.push({ seq: planLog.length + 1, type, data })
  for (let turn = 0; turn < turns; turn++) {
    history.push(new HumanMessage(USER))
    event('turn/start', {})
    for (let i = 0; i < STEPS_PER_TURN; i++) {
      event('request/header', { step: i })
      history.push(...stepMessages(turn * STEPS_PER_TURN + i))
    }
    event('request/header', { step: STEPS_PER_TURN })
    history.push(new AIMessage({ content: FINAL }))
    event('turn/end', {})
  }
  history.push(new HumanMessage(USER))
  const resume = {}
  for (const name of names) {
    const thread = { configurable: { thread_id: `in-graph-long-${name}` }, durability: 'sync' }
    stepsLeft = 0
    await sides[name].invoke(name === 'withPlanMode' ? { messages: history, planLog } : { messages: history }, thread)
    const times = []
    for (let i = 0; i < RESUME_SAMPLES.langgraph; i++) {
      const t = nowNs()
      const checkpointer = new PostgresSaver(counted.pool)
      if (name === 'withPlanMode') {
        const { service, lg, graph } = await planned(checkpointer)
        const agent = await lg.agent(graph, thread) // getState, and the thread's log
        service.get(agent) // the agent attached: its actor replayed the thread's planLog
      } else {
        await plain(checkpointer).getState(thread)
      }
      times.push(nowNs() - t)
    }
    await counted.settled()
    stepsLeft = 1
    modelCalls = []
    await sides[name].invoke({ messages: [new HumanMessage(USER)] }, thread)
    const [call, next] = modelCalls
    resume[name] = { time: stats(times), step: { time: next.at - call.at, statements: next.statements - call.statements, bytes: next.bytes - call.bytes } }
  }
  return { stepsPerRun: STEPS_PER_RUN, stepRounds: STEP_ROUNDS, step, resumeSteps: RESUME_STEPS, planLogEvents: planLog.length, resume }
}

/** The versions of the LangGraph packages measured. */
async function versions() {
  const { readFileSync } = await import('node:fs')
  const of = (name) => JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')).version
  return Object.fromEntries(['@langchain/langgraph', '@langchain/langgraph-checkpoint-postgres', '@langchain/core'].map((name) => [name, of(name)]))
}
