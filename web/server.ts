/**
 * The web chat's server: one instance of a `useChat` app with plan mode. Every request may land on
 * any instance (a load balancer, the round-robin proxy of `web/cluster.ts`), so nothing lives only
 * in this process: the session log, the pending selections and the open reviews are in PostgreSQL
 * (`xstate-plan-mode/postgres`), and each chat's messages are saved there after every response.
 * The process keeps only caches: the service's attached agents and the open sessions, which
 * follow every instance's appends.
 *
 * Routes (JSON unless said):
 * - `POST /api/chat`: the AI SDK UI chat protocol (`DefaultChatTransport`): `streamText` with
 *   `withPlanMode`, answered as a UI message stream;
 * - `GET /api/chats/:id`: the chat's saved messages;
 * - `GET /api/chats/:id/state`: the mode, the open review, the plan's versions (the library's
 *   `planHistory`, each after the first with its `diffPlans` from the previous one) and the live
 *   state of the agent's statechart on this instance;
 * - `POST /api/chats/:id/command` `{ input }`: `/plan …` typed in the composer, logged around its
 *   run so that the instance streaming the turn applies it (R86);
 * - `POST /api/chats/:id/review` `{ reviewId, feedback?, comments: [{ quote, text }] }`: Keep
 *   planning with comments anchored to the plan (R100), which the SDK's approval response cannot
 *   carry (it has a reason string only); or `{ reviewId, decision }` with `decision` one of the two
 *   decisions the SDK's approve/deny cannot carry either (R101): `Approve in a fresh context`,
 *   `Leave plan mode`; see `review` below;
 * - `GET /api/chart`: the statechart's definition, for the page's drawing;
 * - anything else: the built page (`web/dist`, `npm run web:build`).
 * Every response names the instance that answered it (`x-plan-mode-instance`).
 *
 * The service offers the whole set of decisions (R101). After a request in which a plan approved
 * into a fresh context was handed off (R102: the adapter started the model's context again from
 * one message holding the plan and the decisions), the chat's saved UI messages stay as they are,
 * for the user to read; the model's context of the later requests starts where the fresh one
 * did: the chat's `web_contexts` row keeps where (the UI message and the part the handed-off step
 * starts at) and the handoff's text, and each request sends the model that text as its first user
 * message, then the UI messages from that point on (see `contextOf`).
 */
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { extname, join, normalize } from 'node:path'
import { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { convertToModelMessages, stepCountIs, streamText, type LanguageModel, type ModelMessage, type PrepareStepFunction, type UIMessage } from 'ai'
import {
  APPROVE_FRESH_LABEL,
  COMMAND_DONE_EVENT,
  COMMAND_RUN_EVENT,
  createPlanMode,
  diffPlans,
  LEAVE_LABEL,
  PLAN_REVIEW_EVENT,
  REVIEW_MESSAGES,
  planHistory,
  planModeMachine,
  reviewQuestion,
  type PlanAgent,
  type PlanDiffLine,
  type PlanMode,
  type PlanReviewData,
  type PresentedPlan,
  type ReviewQuestion,
  type SessionEvent,
  type UserMessage,
} from 'xstate-plan-mode'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { createPostgresPlanStore, isSeqTaken, type PgListen, type PgQueryable, type PostgresSessionLog } from 'xstate-plan-mode/postgres'
import { offlineChatModel } from '../cli/offline-model.js'
import { workspaceTools } from '../cli/workspace-tools.js'

/** The plan-mode section: the model plans while it is in the system prompt. */
export const SECTION =
  'You are in plan mode. Explore read-only (list files, read them) and design; do not change anything. ' +
  'When the plan is complete, present the whole plan as markdown, starting with a heading, by calling exit_plan_mode.'

const SYSTEM = 'You are a coding agent working in a repository. Answer briefly.'

/** How many chats an instance follows at once (see `agentOf`). */
const MAX_SESSIONS = 500

/**
 * How often a `/plan` or a review answer is decided again when another instance appended first
 * (R84). Each refusal means a row was written meanwhile, and the store grants turns in the order
 * asked, so a decision on the new state lands unless the chat's log grows on without pause.
 */
const DECISION_ATTEMPTS = 50

/** Where `npm run web:build` puts the page. */
export const PAGE_DIR = fileURLToPath(new URL('./dist/', import.meta.url))

/** Options of {@link startWebChat}. */
export interface WebChatOptions {
  /** The database every instance shares: a `pg.Pool`, or a `PGlite` for one instance. */
  db: PgQueryable
  /** How this instance hears the others' appends (`pgListen`, `pgliteListen`). */
  listen: PgListen
  /** This instance's name, sent with every response. */
  instance: string
  /** The model; the offline model (`cli/offline-model.ts`) when absent. */
  model?: LanguageModel
  /** The offline model's pause between streamed chunks, in ms (default 40). */
  chunkDelayMs?: number
  /** The offline model's think time before each reply, in ms (default: `chunkDelayMs`). */
  replyDelayMs?: number
  /** The directory the model's read-only tools see (default: the repository). */
  workspace?: string
  /** The port on 127.0.0.1 (default 0: a free one). */
  port?: number
}

/** A running instance. */
export interface WebChat {
  readonly url: string
  readonly server: Server
  /** Stops serving, disposes the service (open reviews stay open in the log) and closes the store. */
  close(): Promise<void>
}

/** A chat's messages as the page sends and shows them. */
type ChatMessages = UIMessage[]

/** One plan of the current planning episode, as the history shows it (R96). */
export interface PlanVersion {
  /** 1, 2, … within the planning episode (R96). */
  version: number
  title: string
  plan: string
  /** How its review ended; `open` while the user has not answered. */
  outcome: PresentedPlan['outcome']
  /** The keep-planning feedback, when there was some. */
  feedback?: string
  /** Set when a headless policy decided the outcome (R94). */
  by?: 'policy'
  /** Set when the user approved it into a fresh context (R101). */
  fresh?: true
  /** For versions after the first: what changed from the previous version, line by line (R97). */
  diff?: PlanDiffLine[]
}

/** What the page shows beside the chat, read on the instance that answered. */
export interface ChatState {
  instance: string
  mode: { active: boolean; pending?: boolean }
  review: { reviewId: string; title: string; plan: string; callId?: string } | null
  /** The options a review offers (R43, R101), as the library words them: the card's buttons. */
  options: ReviewQuestion['options']
  versions: PlanVersion[]
  chart: { value: unknown }
}

/** Starts one instance on 127.0.0.1. */
export async function startWebChat(options: WebChatOptions): Promise<WebChat> {
  const { db, listen, instance } = options
  const workspace = options.workspace ?? fileURLToPath(new URL('..', import.meta.url))
  const chunkDelayMs = options.chunkDelayMs ?? 40
  const model = options.model ?? offlineChatModel({ section: SECTION, chunkDelayMs, replyDelayMs: options.replyDelayMs ?? chunkDelayMs })
  const store = createPostgresPlanStore({ db, listen, prefix: 'web_' })
  await store.migrate()
  await db.query('CREATE TABLE IF NOT EXISTS web_chats (id text PRIMARY KEY, messages jsonb NOT NULL)')
  // Where each chat's model context starts after a handoff (R102): see `contextOf`.
  await db.query('CREATE TABLE IF NOT EXISTS web_contexts (id text PRIMARY KEY, context jsonb NOT NULL)')
  // The whole set of decisions (R101): Approve, Approve in a fresh context, Keep planning, Leave plan mode.
  const planMode = createPlanMode(
    { section: SECTION },
    { reviews: 'durable', pendingStore: store.pendingStore, maxAttachedAgents: 1000, decisions: 'all' },
  )
  const tools = workspaceTools(workspace)

  /**
   * The open sessions of this instance, one per chat, most recently used last: each follows every
   * instance's appends. At most `MAX_SESSIONS`: the least recently used is closed (its agent
   * detached first), to be opened again from the database when its chat comes back.
   */
  const sessions = new Map<string, Promise<PostgresSessionLog>>()
  const agentOf = async (chatId: string): Promise<PlanAgent> => {
    let session = sessions.get(chatId)
    if (session === undefined) {
      session = store.openSession(chatId)
      session.catch(() => sessions.delete(chatId))
      while (sessions.size >= MAX_SESSIONS) {
        const [oldest, closing] = sessions.entries().next().value as [string, Promise<PostgresSessionLog>]
        sessions.delete(oldest)
        void closing.then((log) => {
          planMode.detach({ id: oldest, session: log })
          return log.close()
        }).catch(() => {})
      }
    } else {
      sessions.delete(chatId) // to the end: most recently used
    }
    sessions.set(chatId, session)
    return { id: chatId, session: await session }
  }

  const loadMessages = async (chatId: string): Promise<ChatMessages> => {
    const { rows } = await db.query('SELECT messages FROM web_chats WHERE id = $1', [chatId])
    const messages = rows[0]?.messages
    return Array.isArray(messages) ? (messages as ChatMessages) : []
  }
  const saveMessages = (chatId: string, messages: ChatMessages) =>
    db.query('INSERT INTO web_chats (id, messages) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO UPDATE SET messages = excluded.messages', [
      chatId,
      JSON.stringify(messages),
    ])

  const loadContext = async (chatId: string): Promise<FreshContext | null> => {
    const { rows } = await db.query('SELECT context FROM web_contexts WHERE id = $1', [chatId])
    return freshContextOf(rows[0]?.context)
  }
  const saveContext = (chatId: string, context: FreshContext) =>
    db.query('INSERT INTO web_contexts (id, context) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO UPDATE SET context = excluded.context', [
      chatId,
      JSON.stringify(context),
    ])

  async function chat(body: { id?: unknown; messages?: unknown }, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const chatId = chatIdOf(body.id)
    if (!Array.isArray(body.messages)) throw new HttpError(400, 'messages must be an array')
    const agent = await agentOf(chatId)
    const plan = withPlanMode({ planMode, agent, system: SYSTEM, tools, abortSignal: signal })
    // A card whose review a /plan closed meanwhile gets its result (R87); one still open waits for the user.
    const messages = plan.settleClosedApprovals(body.messages as ChatMessages)
    refuseUnansweredReview(messages, planMode.openReview(agent)?.callId)
    await saveMessages(chatId, messages)
    // After a handoff (R102) the model's context starts at the fresh one: its first message, then what followed it.
    const context = contextOf(messages, await loadContext(chatId))
    const modelMessages = [
      ...(context ? [context.first] : []),
      ...(await convertToModelMessages(context ? context.messages : messages, { tools: plan.tools })),
      ...plan.takeSteered(),
    ]
    /** The step at which this call handed a plan off (R102), if it did. */
    let handoffStep: number | undefined
    const prepareStep: PrepareStepFunction<typeof plan.tools> = async (options) => {
      const result = await plan.prepareStep(options)
      if (handoffStep === undefined && plan.handoff !== null) handoffStep = options.stepNumber
      return result
    }
    await plan.startTurn({ abortSignal: signal })
    let ended = false
    const end = async () => {
      if (ended) return
      ended = true
      await plan.endTurn().catch(() => {})
    }
    try {
      const result = streamText({
        model,
        messages: modelMessages,
        tools: plan.tools,
        prepareStep,
        stopWhen: stepCountIs(12),
        abortSignal: signal,
      })
      const response = result.toUIMessageStreamResponse({
        originalMessages: messages,
        headers: { 'x-plan-mode-instance': instance },
        onFinish: async ({ messages: all, responseMessage, isContinuation }) => {
          await end()
          await saveMessages(chatId, all).catch(() => {})
          // R102: the model's later requests start from the fresh context this call began.
          if (handoffStep !== undefined && plan.handoff !== null) {
            const before = isContinuation ? (messages.at(-1)?.parts.length ?? 0) : 0
            const part = before + stepStart(responseMessage.parts.slice(before), handoffStep)
            await saveContext(chatId, { messageId: responseMessage.id, part, text: plan.handoff.text }).catch(() => {})
          }
        },
        onError: (error) => (error instanceof Error ? error.message : String(error)),
      })
      await send(res, response)
    } finally {
      await end()
    }
  }

  /** The review's options, the same for every chat of this service. */
  const reviewOptions = reviewQuestion('', planMode.decisions).options

  async function state(chatId: string): Promise<ChatState> {
    const agent = await agentOf(chatId)
    const open = planMode.openReview(agent)
    return {
      instance,
      mode: planMode.get(agent),
      review: open === null ? null : { reviewId: open.reviewId, title: open.title, plan: open.plan, ...(open.callId ? { callId: open.callId } : {}) },
      versions: currentVersions(agent.session),
      options: reviewOptions,
      chart: { value: planMode.actor(agent).getSnapshot().value },
    }
  }

  async function command(chatId: string, body: { input?: unknown }) {
    if (typeof body.input !== 'string') throw new HttpError(400, 'input must be a string')
    const agent = await agentOf(chatId)
    // `/plan <message>`: the message is the page's to send as the next user message.
    const steered: UserMessage[] = []
    const rawInput = body.input
    let result: Awaited<ReturnType<PlanMode['command']['run']>>
    const commandId = randomUUID() // unique across instances: every instance pairs the run with its done (R86)
    await agent.session.append(COMMAND_RUN_EVENT, { commandId, name: 'plan', args: rawInput })
    for (let attempt = 1; ; attempt++) {
      steered.length = 0
      result = await planMode.command.run({ agent: { ...agent, steer: (message) => steered.push(message) }, rawInput })
      // Another instance wrote first (R84): nothing was written, and its rows are taken now; decide
      // again on the log as it is, as the user would, so a toggle that can be applied is applied.
      if (result.kind === 'success' || !isSeqTaken(result.text) || attempt === DECISION_ATTEMPTS) break
    }
    await agent.session.append(COMMAND_DONE_EVENT, { commandId, kind: result.kind, text: result.text })
    const text = steered
      .flatMap((m) => m.content.flatMap((part) => ((part as { type?: unknown }).type === 'text' ? [String((part as { text?: unknown }).text)] : [])))
      .join('\n')
    return { ...result, ...(text ? { steered: text } : {}) }
  }

  /**
   * The two decisions the SDK's approve/deny cannot carry (R101), `{ reviewId, decision }`: the
   * library records the review's one closing record, `toldInResult: true`, and the answer tells the
   * page how to settle the card as `settleClosedApprovals` would (R87): Leave plan mode as the
   * exit call's error, `{ outcome: 'left', text }` (R101's text), Approve in a fresh context as its
   * result, `{ outcome: 'approved', fresh: true }`. The page settles the card so and sends the chat
   * on (no new message): in that request the boundary leaves plan mode without a notice; after a
   * leave the model reads the left text once, in the call's result; after a fresh approval the
   * adapter hands the plan off at that request's first step (R102), setting that result aside.
   *
   * Keep planning with comments anchored to the plan (R100). The SDK's approval response carries
   * only a reason string, so the page posts the answer here first; the library checks it (each
   * quote an exact excerpt of the plan under review) and records the one closing record of the
   * review, `toldInResult: true`: the model is told in the exit call's result, never at a step
   * boundary (R81). The answer gives back the feedback the record holds (the feedback box's text,
   * then the comments, R100); the page then answers the card `{ approved: false, reason: feedback }`
   * and `useChat` sends the chat on as for any Keep planning. On that request the adapter finds no
   * open review bound to the call, so it records nothing more, and shows the model the denial as
   * R45's text with that feedback (R82). Were the page gone before it answered the card, the next
   * request of any tab still gives the card that result (`settleClosedApprovals`, R87).
   * @throws HttpError 400 for a malformed body, 409 when the review is not open (the library's R80
   *   message), 422 when a comment is refused (the library's R100 message, e.g. a quote the plan
   *   does not hold); nothing was changed then.
   */
  async function review(chatId: string, body: Record<string, unknown>): Promise<ReviewAnswered> {
    const checked = reviewAnswerOf(body)
    const { reviewId } = checked
    const agent = await agentOf(chatId)
    const answer =
      'decision' in checked
        ? // One option alone, nothing else said (R44, R101).
          { answers: [{ id: 'plan-review', selected: [checked.decision] }] }
        : {
            answers: [
              { id: 'plan-review', selected: ['Keep planning'], ...(checked.feedback !== undefined ? { custom: checked.feedback } : {}), comments: checked.comments },
            ],
          }
    for (let attempt = 1; ; attempt++) {
      try {
        await planMode.answerReview(agent, reviewId, answer, { toldInResult: true })
        break
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error)
        // Another instance wrote first (R84): nothing was written; answer again on the log as it is now.
        if (isSeqTaken(error) && attempt < DECISION_ATTEMPTS) continue
        if (message.startsWith('plan review comment')) throw new HttpError(422, message)
        if (message.startsWith(`plan review ${reviewId} is already closed`) || message.startsWith(`no plan review ${reviewId} is open`)) {
          throw new HttpError(409, message)
        }
        throw error
      }
    }
    // The review's first closing record (R80): the outcome the log holds, whoever wrote it.
    const closing = agent.session.events.find((event): event is SessionEvent<PlanReviewData> => {
      const data = event.data as Partial<PlanReviewData> | null
      return event.type === PLAN_REVIEW_EVENT && data?.reviewId === reviewId && data.outcome !== 'requested'
    })
    if ('decision' in checked) {
      // R101: what the card shows, and what the model reads in the exit call's result.
      if (checked.decision === LEAVE_LABEL && closing?.data.outcome === 'left') return { outcome: 'left', text: REVIEW_MESSAGES.left }
      if (checked.decision === APPROVE_FRESH_LABEL && closing?.data.outcome === 'approved' && closing.data.fresh === true) return { outcome: 'approved', fresh: true }
      throw new Error(`plan review ${reviewId} was answered but its record is not in this instance's log`)
    }
    if (closing === undefined || closing.data.outcome !== 'keep-planning' || typeof closing.data.feedback !== 'string') {
      throw new Error(`plan review ${reviewId} was answered but its record is not in this instance's log`)
    }
    return { outcome: 'keep-planning', feedback: closing.data.feedback }
  }

  const definition = JSON.parse(JSON.stringify(planModeMachine.definition)) as unknown

  const server = createServer((req, res) => {
    res.setHeader('x-plan-mode-instance', instance)
    const controller = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) controller.abort()
    })
    const started = Date.now()
    if (process.env.WEB_DEBUG) {
      console.error(`[${instance}] > ${req.method} ${req.url}`)
      res.on('close', () => console.error(`[${instance}] < ${req.method} ${req.url} ${res.statusCode} ${Date.now() - started} ms`))
    }
    route(req, res, controller.signal).catch((error: unknown) => {
      if (process.env.WEB_DEBUG) console.error(`[${instance}] ! ${req.method} ${req.url}`, error)
      const status = error instanceof HttpError ? error.status : 500
      if (!res.headersSent) json(res, status, { error: error instanceof Error ? error.message : String(error) })
      else res.destroy()
    })
  })

  async function route(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    // Loopback names only: a page on another site that rebinds its DNS name to 127.0.0.1 gets nothing.
    const host = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d+)?$/i
    if (!host.test(req.headers.host ?? '')) throw new HttpError(421, 'this server answers only to 127.0.0.1 and localhost')
    const url = new URL(req.url ?? '/', 'http://localhost')
    const path = url.pathname
    if (req.method === 'POST' && path === '/api/chat') return chat(await readJson(req), res, signal)
    if (req.method === 'GET' && path === '/api/chart') return json(res, 200, definition)
    const match = /^\/api\/chats\/([^/]+)(\/state|\/command|\/review)?$/.exec(path)
    if (match) {
      const chatId = chatIdOf(match[1]!) // ids are plain: nothing to decode
      if (req.method === 'GET' && match[2] === undefined) return json(res, 200, { messages: await loadMessages(chatId) })
      if (req.method === 'GET' && match[2] === '/state') return json(res, 200, await state(chatId))
      if (req.method === 'POST' && match[2] === '/command') return json(res, 200, await command(chatId, await readJson(req)))
      if (req.method === 'POST' && match[2] === '/review') return json(res, 200, await review(chatId, await readJson(req)))
    }
    if (req.method === 'GET' && !path.startsWith('/api/')) return page(path, res)
    throw new HttpError(404, `no route for ${req.method} ${path}`)
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', resolve)
  })
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await planMode.dispose()
      await store.close()
    },
  }
}

/** Each session's diffs by the seq of the record that presented the version: a log's records never change. */
const diffsOf = new WeakMap<object, Map<number, PlanDiffLine[]>>()

/**
 * The plans of the log's current planning episode (the library's `planHistory`, R96), each after
 * the first with its line diff from the previous version (`diffPlans`, R97). The page polls this,
 * so each diff is computed once per open session.
 */
function currentVersions(session: { readonly events: readonly SessionEvent[] }): PlanVersion[] {
  const plans = planHistory(session.events)
  let start = plans.length - 1
  while (start > 0 && plans[start]!.version > 1) start--
  let diffs = diffsOf.get(session)
  if (diffs === undefined) diffsOf.set(session, (diffs = new Map()))
  return plans.slice(Math.max(start, 0)).map((presented) => {
    const { version, title, plan, outcome, feedback, by, previous } = presented
    let diff: PlanDiffLine[] | undefined
    if (previous !== null) {
      diff = diffs.get(presented.seq)
      if (diff === undefined) diffs.set(presented.seq, (diff = diffPlans(previous, plan)))
    }
    const { fresh } = presented // an approval into a fresh context (R101)
    return { version, title, plan, outcome, ...(feedback !== undefined ? { feedback } : {}), ...(by ? { by } : {}), ...(fresh ? { fresh } : {}), ...(diff ? { diff } : {}) }
  })
}

/** Where a chat's model context starts after a handoff (R102): saved per chat in `web_contexts`. */
interface FreshContext {
  /** The UI message the handed-off step's response is in. */
  messageId: string
  /** The index of that step's first part in it (its `step-start`). */
  part: number
  /** The fresh context's first message (the handoff's `text`). */
  text: string
}

/** A saved context read back; null when there is none, or it is not one. */
function freshContextOf(value: unknown): FreshContext | null {
  const { messageId, part, text } = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  return typeof messageId === 'string' && typeof text === 'string' && Number.isInteger(part) && (part as number) >= 0 ? { messageId, part: part as number, text } : null
}

/**
 * The model's context of a request after a handoff (R102): the fresh context's first message, one
 * user message holding the handoff's text, then the chat's UI messages from the handed-off step on
 * (the rest of its message, and every message after it). Null without a handoff, or when the
 * messages sent do not hold that step (a tab whose history stops before it): then the whole history.
 */
function contextOf(messages: ChatMessages, context: FreshContext | null): { first: ModelMessage; messages: ChatMessages } | null {
  if (context === null) return null
  const index = messages.findIndex((message) => message.id === context.messageId)
  if (index < 0 || messages[index]!.parts.length < context.part) return null
  const rest = messages[index]!.parts.slice(context.part)
  return {
    first: { role: 'user', content: [{ type: 'text', text: context.text }] },
    messages: [...(rest.length > 0 ? [{ ...messages[index]!, parts: rest }] : []), ...messages.slice(index + 1)],
  }
}

/** The index of step `step`'s `step-start` among a response's parts (the first part when it has none). */
function stepStart(parts: UIMessage['parts'], step: number): number {
  let seen = -1
  for (let i = 0; i < parts.length; i++) {
    if (parts[i]!.type === 'step-start' && ++seen === step) return i
  }
  return 0
}

/**
 * The messages may not go on past a review card the user has not answered while its review is
 * still open: the user answers it first (or types `/plan off`, which closes it).
 * @throws HttpError 409
 */
function refuseUnansweredReview(messages: ChatMessages, openCallId: string | undefined): void {
  if (openCallId === undefined) return
  const waits = messages.some((m) =>
    m.parts.some((part) => part.type === 'tool-exit_plan_mode' && 'state' in part && part.state === 'approval-requested' && part.toolCallId === openCallId),
  )
  if (waits) throw new HttpError(409, 'Answer the open plan review first (Approve, Approve in a fresh context, Keep planning or Leave plan mode), or type /plan off.')
}

/**
 * What `POST /api/chats/:id/review` answers: the outcome recorded and the feedback the model is
 * given (R100); or, for a decision (R101), how the card is settled: the exit call's error text
 * after a leave, its result after a fresh approval.
 */
export type ReviewAnswered =
  | {
      outcome: 'keep-planning'
      /** The record's feedback: the feedback box's text (when not blank), a blank line, then the comments. */
      feedback: string
    }
  | { outcome: 'left'; text: string }
  | { outcome: 'approved'; fresh: true }

/** The decisions the route takes (R101): the two the SDK's tool approval cannot carry. */
const ROUTE_DECISIONS: readonly string[] = [APPROVE_FRESH_LABEL, LEAVE_LABEL]

/** The limits of a review answer: a comment quotes a line, so a plan's size bounds it. */
const MAX_COMMENTS = 50
const MAX_COMMENT_TEXT = 4000
const MAX_QUOTE = 20_000

/**
 * A review answer's body, shape-checked (it is untrusted): `{ reviewId, feedback?, comments }`
 * with 1–50 comments `{ quote, text }` of strings, or `{ reviewId, decision }` with `decision`
 * exactly one of the two labels R101 adds, alone. What comments say (a blank text, a quote the
 * plan does not hold) is the library's to refuse (R100).
 * @throws HttpError 400 naming what is wrong.
 */
function reviewAnswerOf(
  body: Record<string, unknown>,
): { reviewId: string; decision: string } | { reviewId: string; feedback?: string; comments: { quote: string; text: string }[] } {
  const { reviewId, feedback, comments, decision } = body
  if (typeof reviewId !== 'string' || reviewId.length === 0 || reviewId.length > 200) throw new HttpError(400, 'reviewId must be the open review\'s id (a string)')
  if (decision !== undefined) {
    // R101: only the two labels; a decision is one option alone, so nothing goes with it (R44).
    if (typeof decision !== 'string' || !ROUTE_DECISIONS.includes(decision)) {
      throw new HttpError(400, `decision must be ${ROUTE_DECISIONS.map((label) => JSON.stringify(label)).join(' or ')} when given`)
    }
    if (feedback !== undefined || comments !== undefined) throw new HttpError(400, 'a decision goes alone: feedback and comments go with Keep planning')
    return { reviewId, decision }
  }
  if (feedback !== undefined && typeof feedback !== 'string') throw new HttpError(400, 'feedback must be a string when given')
  if (typeof feedback === 'string' && feedback.length > MAX_COMMENT_TEXT) throw new HttpError(400, `feedback is longer than ${MAX_COMMENT_TEXT} characters`)
  if (!Array.isArray(comments) || comments.length === 0 || comments.length > MAX_COMMENTS) {
    throw new HttpError(400, `comments must be an array of 1–${MAX_COMMENTS} { quote, text }`)
  }
  const checked = comments.map((comment: unknown, i) => {
    const { quote, text } = (typeof comment === 'object' && comment !== null ? comment : {}) as { quote?: unknown; text?: unknown }
    if (typeof quote !== 'string' || typeof text !== 'string') throw new HttpError(400, `comment ${i + 1} must be { quote: string, text: string }`)
    if (quote.length > MAX_QUOTE || text.length > MAX_COMMENT_TEXT) {
      throw new HttpError(400, `comment ${i + 1} is too long (quote at most ${MAX_QUOTE} characters, text at most ${MAX_COMMENT_TEXT})`)
    }
    return { quote, text }
  })
  return { reviewId, ...(feedback !== undefined ? { feedback } : {}), comments: checked }
}

/** An error with the HTTP status it answers. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function chatIdOf(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,100}$/.test(value)) throw new HttpError(400, 'a chat id is 1–100 letters, digits, - or _')
  return value
}

const MAX_BODY = 4 * 1024 * 1024

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY) throw new HttpError(413, 'request body too large')
    chunks.push(chunk as Buffer)
  }
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
    if (typeof body !== 'object' || body === null) throw new Error('not an object')
    return body as Record<string, unknown>
  } catch {
    throw new HttpError(400, 'the body must be a JSON object')
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}

/** Writes a fetch `Response` (the UI message stream) to Node's response. */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => (headers[name] = value))
  res.writeHead(response.status, headers)
  if (response.body === null) return void res.end()
  await new Promise<void>((resolve, reject) => {
    const body = Readable.fromWeb(response.body as never)
    body.on('error', reject)
    res.on('close', resolve)
    body.pipe(res)
  })
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
}

/** The built page: `/` and unknown paths are the app; files come from `web/dist` only. */
async function page(path: string, res: ServerResponse): Promise<void> {
  const relative = normalize(path).replace(/^([/\\])+/, '')
  const file = relative === '' || !extname(relative) ? 'index.html' : relative
  if (file.split(/[/\\]/).includes('..')) throw new HttpError(404, 'not found')
  let content: Buffer
  try {
    content = await readFile(join(PAGE_DIR, file))
  } catch {
    if (file === 'index.html') throw new HttpError(500, 'the page is not built: run `npm run web:build`')
    throw new HttpError(404, 'not found')
  }
  res.writeHead(200, {
    'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
    'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'",
  })
  res.end(content)
}
