/**
 * The web chat's server: one instance of a `useChat` app with plan mode. Every request may land on
 * any instance (a load balancer, the round-robin proxy of `apps/web/cluster.ts`), so nothing lives only
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
 * - `POST /api/chart/layout` `{ widths }`: the chart's elkjs layouts for the page's label widths,
 *   computed here once per set of widths rather than in the page on every load (R178,
 *   `apps/shared/visualizer/chart-layout.ts`);
 * - anything else: the built page (`apps/web/dist`, `npm run web:build`).
 * Every response names the instance that answered it (`x-plan-mode-instance`).
 *
 * What a request must be (R103–R106, the demo's security contract; `apps/web/requests.ts` holds the
 * checks the cluster's proxy makes too): a loopback `Host` (421); for a POST, this server's own
 * `Origin` (403) and a JSON body (415) of at most 4 MiB (413) nested at most 64 deep (400). A chat
 * is the browser's that first wrote in it: the browser gets a random owner id, signed with the
 * deployment's secret, in an HttpOnly, SameSite=Strict cookie (one only: 400), the chat's row
 * keeps a hash of it, a GET creates no chat, and any request on the chat from another owner
 * answers 404 (`ownerOf`, `checkOwner`). Approvals are signed (the SDK's
 * `experimental_toolApprovalSecret`) with a key of the chat's own, derived from the deployment's
 * secret. A chat runs one `useChat` request at a time, across instances (`takeTurn`), and a request
 * may not drop or settle a review card the saved messages hold waiting, nor lack the card of the
 * review the log holds open (`refuseLostCards`); no save replaces that card (`ChatTurn`); a review
 * whose card no saved copy and no request holds is closed as keep planning (`closeCardlessReview`).
 *
 * The service offers the whole set of decisions (R101). After a request in which a plan approved
 * into a fresh context was handed off (R102: the adapter started the model's context again from
 * one message holding the plan and the decisions), the chat's saved UI messages stay as they are,
 * for the user to read; the model's context of the later requests starts where the fresh one
 * did: the chat's `web_contexts` row keeps where (the UI message and the part the handed-off step
 * starts at) and the handoff's text, and each request sends the model that text as its first user
 * message, then the UI messages from that point on (see `contextOf`).
 */
import { createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { extname, join, normalize } from 'node:path'
import { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { convertToModelMessages, safeValidateUIMessages, stepCountIs, streamText, type LanguageModel, type ModelMessage, type PrepareStepFunction, type UIMessage } from 'ai'
import {
  PLAN_MODE_TEXTS,
  PLAN_LOG_EVENTS,
  createPlanMode,
  diffPlans,
  planHistory,
  type PlanAgent,
  type PlanDiffLine,
  type PlanMode,
  type PlanReviewData,
  type PresentedPlan,
  type ReviewQuestion,
  type SessionEvent,
  type UserMessage,
} from 'xstate-plan-mode'
import { planModeMachine } from 'xstate-plan-mode/inspect'
import { withPlanMode } from 'xstate-plan-mode/ai-sdk'
import { createPostgresPlanStore, isSeqTaken, type PgListen, type PgQueryable, type PostgresSessionLog } from 'xstate-plan-mode/postgres'
import { offlineChatModel } from '../shared/offline-model.js'
import { workspaceTools } from '../shared/workspace-tools.js'
import {
  BODY_TOO_LARGE,
  CROSS_SITE_REFUSED,
  HOST_REFUSED,
  isJsonContentType,
  isLoopbackHost,
  isSameOrigin,
  MAX_BODY,
  MAX_JSON_DEPTH,
  nestsDeeperThan,
  NOT_JSON,
  TOO_DEEP,
} from './requests.js'
// The library's one bounded wait and timer bound (the web chat runs from this repository's sources).
import { MAX_TIMEOUT_MS, waitAtMost } from './timeouts.js'
import type { StateNodeDefinition } from '../shared/visualizer/client/model.js'
import { BadWidths, ChartTooLarge, LayoutBusy, chartLayouts, holdLayoutWorker } from '../shared/visualizer/chart-layout.js'

/** The plan-mode section: the model plans while it is in the system prompt. */
export const SECTION =
  'You are in plan mode. Explore read-only (list files, read them) and design; do not change anything. ' +
  'When the plan is complete, present the whole plan as markdown, starting with a heading, by calling exit_plan_mode.'

const SYSTEM = 'You are a coding agent working in a repository. Answer briefly.'

/** How many chats an instance follows at once (see `useAgent`), unless `maxSessions` says fewer (R179). */
export const DEFAULT_MAX_SESSIONS = 500

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
  /** The model; the offline model (`apps/shared/offline-model.ts`) when absent. */
  model?: LanguageModel
  /** The offline model's pause between streamed chunks, in ms (default 40). */
  chunkDelayMs?: number
  /** The offline model's think time before each reply, in ms (default: `chunkDelayMs`). */
  replyDelayMs?: number
  /** The directory the model's read-only tools see (default: the repository). */
  workspace?: string
  /** The port on 127.0.0.1 (default 0: a free one). */
  port?: number
  /**
   * The deployment's secret that signs approvals (R105), at least 32 characters (else
   * `startWebChat` rejects with a TypeError); every instance of a deployment needs the same. Default: one generated by the first instance on the database
   * and kept there (`web_settings`), so every instance on it shares it.
   */
  approvalSecret?: string
  /**
   * How long a request holds its chat's turn without renewing it, in ms (R106; default 30 000):
   * a whole number from 100 to 2 147 483 647 (else `startWebChat` rejects with a TypeError). The
   * turn is renewed every third of it, and a request waits that long for its stream's end.
   */
  turnLeaseMs?: number
  /**
   * How many chats' sessions this instance keeps open at most (R104, R179; default 500, also the
   * most it takes): a whole number from 1 to 500 (else `startWebChat` rejects with a TypeError).
   * Beyond it, the least recently used session no request is using is closed.
   */
  maxSessions?: number
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
  // R105: a secret given is checked before anything touches the database.
  if (options.approvalSecret !== undefined) checkApprovalSecret(options.approvalSecret)
  const turnLeaseMs = checkTurnLease(options.turnLeaseMs ?? DEFAULT_TURN_LEASE_MS)
  const maxSessions = checkMaxSessions(options.maxSessions ?? DEFAULT_MAX_SESSIONS)
  // Validated a whole number above: safe to write into the statement.
  const turnLease = `interval '${turnLeaseMs} milliseconds'`
  const workspace = options.workspace ?? fileURLToPath(new URL('../..', import.meta.url))
  const chunkDelayMs = options.chunkDelayMs ?? 40
  const model = options.model ?? offlineChatModel({ section: SECTION, chunkDelayMs, replyDelayMs: options.replyDelayMs ?? chunkDelayMs })
  const store = createPostgresPlanStore({ db, listen, prefix: 'web_' })
  await store.migrate()
  await migrateChatTables(db)
  const approvalSecret = await deploymentSecret(db, options.approvalSecret)
  const ownerKey = ownerKeyOf(approvalSecret)
  // The whole set of decisions (R101): Approve, Approve in a fresh context, Keep planning, Leave plan mode.
  const planMode = createPlanMode(
    { section: SECTION, review: 'durable', pendingStore: store.pendingStore, limits: { maxAttachedAgents: 1000 }, decisions: 'all' },
  )
  const tools = workspaceTools(workspace)

  /**
   * The open sessions of this instance, one per chat, most recently used last, each with how many
   * requests are using it: each follows every instance's appends. Beyond `maxSessions`, the least
   * recently used one that no request is using is closed (its agent detached first), to be opened
   * again from the database when its chat comes back. One a request uses is never closed under it
   * (R104: the answer it streams would fail on its next append), so while more are in use the
   * instance holds more, until their requests end.
   */
  const sessions = new Map<string, { log: Promise<PostgresSessionLog>; users: number }>()
  const closeIdleSessions = () => {
    for (const [chatId, open] of sessions) {
      if (sessions.size <= maxSessions) return
      if (open.users > 0) continue
      sessions.delete(chatId)
      void open.log
        .then((log) => {
          planMode.detach({ id: chatId, session: log })
          return log.close()
        })
        .catch(() => {})
    }
  }
  /** The chat's agent on this instance, for one request, which calls `release()` once done with it. */
  const useAgent = async (chatId: string): Promise<{ agent: PlanAgent & { session: PostgresSessionLog }; release: () => void }> => {
    let open = sessions.get(chatId)
    if (open === undefined) {
      const opening = { log: store.openSession(chatId), users: 0 }
      opening.log.catch(() => {
        if (sessions.get(chatId) === opening) sessions.delete(chatId)
      })
      open = opening
    } else {
      sessions.delete(chatId) // to the end: most recently used
    }
    sessions.set(chatId, open)
    const used = open
    used.users++
    closeIdleSessions()
    let released = false
    const release = () => {
      if (released) return
      released = true
      used.users--
      closeIdleSessions()
    }
    try {
      return { agent: { id: chatId, session: await used.log }, release }
    } catch (error) {
      release()
      throw error
    }
  }
  /** Runs `use` with the chat's agent on this instance (see `useAgent`). */
  const withAgent = async <T>(chatId: string, use: (agent: PlanAgent & { session: PostgresSessionLog }) => Promise<T> | T): Promise<T> => {
    const { agent, release } = await useAgent(chatId)
    try {
      return await use(agent)
    } finally {
      release()
    }
  }

  const loadMessages = async (chatId: string): Promise<ChatMessages> => {
    const { rows } = await db.query('SELECT messages FROM web_chats WHERE id = $1', [chatId])
    const messages = rows[0]?.messages
    return Array.isArray(messages) ? (messages as ChatMessages) : []
  }

  /** The owner of each chat this instance has seen (an owner never changes), at most `MAX_OWNERS_KNOWN`. */
  const owners = new Map<string, string>()
  /**
   * R103: the chat is `owner`'s, who first wrote in it: a POST on a chat nobody has used yet (no
   * row) creates its row for them; a row saved before chats had owners becomes theirs on a POST.
   * A GET creates and claims nothing: a chat no row holds, or one no owner has claimed yet, answers
   * 404, as one of another owner does,
   * so that a page of another site (`<img src>` needs no cookie and no Origin) cannot make the
   * instance write rows or open sessions. Any other owner gets the 404 of a chat that does not
   * exist, so that the answer does not confirm that it does.
   * @throws HttpError 404 `no such chat`
   */
  async function checkOwner(chatId: string, owner: string, { create }: { create: boolean }): Promise<void> {
    let known = owners.get(chatId)
    if (known === undefined) {
      let stored: unknown
      if (!create) {
        const { rows } = await db.query('SELECT owner FROM web_chats WHERE id = $1', [chatId])
        stored = rows[0]?.owner
        // A cookie-less GET (another site's <img>) must not claim a chat saved before chats had owners.
        if (typeof stored !== 'string') throw new HttpError(404, NO_SUCH_CHAT)
      }
      if (typeof stored !== 'string') {
        const { rows } = await db.query(
          "INSERT INTO web_chats (id, messages, owner) VALUES ($1, '[]'::json, $2) ON CONFLICT (id) DO UPDATE SET owner = COALESCE(web_chats.owner, excluded.owner) RETURNING owner",
          [chatId, owner],
        )
        stored = rows[0]?.owner
      }
      if (typeof stored !== 'string') throw new Error(`the chat ${chatId} has no owner in web_chats after claiming it`)
      if (owners.size >= MAX_OWNERS_KNOWN) owners.delete(owners.keys().next().value as string)
      owners.set(chatId, (known = stored))
    }
    if (known !== owner) throw new HttpError(404, NO_SUCH_CHAT)
  }

  /**
   * R106: the chat's turn, taken for one `useChat` request: one request at a time per chat, across
   * instances, so that two requests never save the chat's messages from two copies (the last
   * save would drop what the other added, an open review's card among it). The turn is a lease
   * in the chat's row, renewed while the request runs, that a crashed instance's request loses
   * after `turnLeaseMs`. Null when another request holds it. Gives the messages saved when taken.
   */
  async function takeTurn(chatId: string): Promise<ChatTurn | null> {
    const token = randomUUID()
    const { rows } = await db.query(
      `UPDATE web_chats SET turn = $2, turn_until = now() + ${turnLease} WHERE id = $1 AND (turn IS NULL OR turn_until < now()) RETURNING messages`,
      [chatId, token],
    )
    if (rows.length === 0) return null
    const renew = setInterval(() => {
      db.query(`UPDATE web_chats SET turn_until = now() + ${turnLease} WHERE id = $1 AND turn = $2`, [chatId, token]).catch(() => {})
    }, Math.floor(turnLeaseMs / 3))
    renew.unref()
    /** The turn's one ending, once asked for: set at once, so a second call cannot end it otherwise. */
    let ending: Promise<void> | undefined
    /**
     * What a save writes, as SQL: the messages (`$3`), unless they lack the card of the review the
     * log holds open and the saved messages hold it: then the saved ones stay (R106).
     */
    const messagesSql = (messages: ChatMessages, openCallId: string | undefined) =>
      openCallId === undefined || holdsOpenCard(messages, openCallId)
        ? { sql: '$3::json', params: [] }
        : { sql: `CASE WHEN ${SAVED_HOLDS_OPEN_CARD('$4')} THEN messages ELSE $3::json END`, params: [openCallId] }
    /**
     * R106: messages holding the card of the review the log holds open, saved after the turn was
     * lost (its lease ran out and another request took it, or the request gave it up while they
     * were on their way): written still when the saved messages lack that card, which nothing
     * else would save, so that the review stays answerable.
     */
    const keepOpenCard = async (messages: ChatMessages, openCallId: string | undefined) => {
      if (openCallId === undefined || !holdsOpenCard(messages, openCallId)) return
      await db.query(`UPDATE web_chats SET messages = $2::json WHERE id = $1 AND NOT ${SAVED_HOLDS_OPEN_CARD('$3')}`, [chatId, JSON.stringify(messages), openCallId])
    }
    return {
      saved: await savedMessagesOf(rows[0]?.messages),
      async save(messages, openCallId) {
        if (ending === undefined) {
          const { sql, params } = messagesSql(messages, openCallId)
          const { rows: saved } = await db.query(`UPDATE web_chats SET messages = ${sql} WHERE id = $1 AND turn = $2 RETURNING id`, [chatId, token, JSON.stringify(messages), ...params])
          if (saved.length > 0) return
        }
        await keepOpenCard(messages, openCallId)
      },
      end(messages, openCallId) {
        if (ending !== undefined) return messages === undefined ? ending : ending.catch(() => {}).then(() => keepOpenCard(messages, openCallId))
        ending = (async () => {
          clearInterval(renew) // a turn not given back (the database failed) ends with its lease
          if (messages === undefined) {
            await db.query('UPDATE web_chats SET turn = NULL, turn_until = NULL WHERE id = $1 AND turn = $2', [chatId, token])
            return
          }
          const { sql, params } = messagesSql(messages, openCallId)
          const { rows: saved } = await db.query(`UPDATE web_chats SET messages = ${sql}, turn = NULL, turn_until = NULL WHERE id = $1 AND turn = $2 RETURNING id`, [
            chatId,
            token,
            JSON.stringify(messages),
            ...params,
          ])
          if (saved.length === 0) await keepOpenCard(messages, openCallId)
        })()
        return ending
      },
    }
  }

  /**
   * R106: closes the review the log holds open when no card can answer it: neither the chat's saved
   * messages (`saved`) nor the request's (`messages`) hold its card, because the request that opened
   * it died before it saved them, or its save failed. The caller holds the chat's turn, so that
   * request, if it still runs, has lost its lease. Left open, the review would have every request
   * refused for lacking its card, and no reload could bring the card back. It is closed as R82 closes
   * a review no card can answer: keep planning, no feedback, `toldInResult: true`, nothing approved;
   * the request goes on, and the model, which never saw the call, presents the plan again.
   */
  async function closeCardlessReview(agent: PlanAgent & { session: PostgresSessionLog }, saved: ChatMessages, messages: ChatMessages): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const open = planMode.openReview(agent)
      if (open?.callId === undefined || holdsOpenCard(saved, open.callId) || holdsOpenCard(messages, open.callId)) return
      try {
        await planMode.answerReview(agent, open.reviewId, { answers: [{ id: 'plan-review', selected: [PLAN_MODE_TEXTS.review.labels.keepPlanning] }] }, { toldInResult: true })
        return
      } catch (error) {
        // Another instance wrote first (R84), or closed the review itself: decide again on the log as it is now.
        if (attempt < DECISION_ATTEMPTS && (isSeqTaken(error) || planMode.openReview(agent)?.reviewId !== open.reviewId)) continue
        throw error
      }
    }
  }

  const loadContext = async (chatId: string): Promise<FreshContext | null> => {
    const { rows } = await db.query('SELECT context FROM web_contexts WHERE id = $1', [chatId])
    return freshContextOf(rows[0]?.context)
  }
  const saveContext = (chatId: string, context: FreshContext) =>
    db.query('INSERT INTO web_contexts (id, context) VALUES ($1, $2::json) ON CONFLICT (id) DO UPDATE SET context = excluded.context', [
      chatId,
      JSON.stringify(context),
    ])

  /**
   * `POST /api/chat` of the chat's owner (R103). The messages are checked (R104), the chat's turn
   * is taken (R106), and the request must keep every card the saved messages hold waiting
   * (R106). The request's messages are saved once the SDK has taken them (its first step starts:
   * after it checked the approvals' signatures, R105), so a refused approval saves nothing; the
   * messages with the answer are saved as the turn ends, by the stream's `onFinish`, also when the
   * client went away mid-answer: the request waits for it, at most as long as a lease lasts.
   */
  async function chat(body: { id?: unknown; messages?: unknown }, owner: string, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const chatId = chatIdOf(body.id)
    // R104: a refused body changes nothing: it is checked before the chat is claimed (R103).
    const checked = await safeValidateUIMessages({ messages: body.messages })
    if (!checked.success) throw new HttpError(400, MESSAGES_REFUSED)
    await checkOwner(chatId, owner, { create: true })
    const turn = await takeTurn(chatId)
    if (turn === null) throw new HttpError(409, TURN_TAKEN)
    const request = chatRequest(turn)
    try {
      const { agent, release } = await useAgent(chatId)
      request.holdsAgentUntilClosed(release)
      // R106: decide on the log as the database holds it, what the requests before this one wrote
      // on any instance (a review closed there a moment ago is closed here too), whether or not
      // this instance heard their NOTIFY.
      await agent.session.catchUp()
      const plan = withPlanMode({ planMode, agent, system: SYSTEM, tools, abortSignal: signal })
      // A card whose review a /plan closed meanwhile gets its result (R87); one still open waits for the user.
      const messages = plan.settleClosedApprovals(checked.data as ChatMessages)
      const saved = plan.settleClosedApprovals(turn.saved)
      await closeCardlessReview(agent, saved, messages)
      const openCallId = planMode.openReview(agent)?.callId
      refuseLostCards(saved, messages, openCallId)
      refuseUnansweredReview(messages, openCallId)
      /** The call of the review the log holds open as the database has it now, for a save (R106). */
      const openCallIdNow = async () => {
        await agent.session.catchUp().catch(() => {}) // else: the log as this instance has it
        return planMode.openReview(agent)?.callId
      }
      // After a handoff (R102) the model's context starts at the fresh one: its first message, then what followed it.
      const context = contextOf(messages, await loadContext(chatId))
      const modelMessages = [
        ...(context ? [context.first] : []),
        ...(await convertToModelMessages(context ? context.messages : messages, { tools: plan.tools })),
        ...plan.takeSteered(),
      ]
      const prepareStep: PrepareStepFunction<typeof plan.tools> = async (options) => {
        if (options.stepNumber === 0) {
          request.takenBySdk()
          await turn.save(messages, await openCallIdNow())
        }
        const result = await plan.prepareStep(options)
        if (plan.handoff !== null) request.handedOffAt(options.stepNumber)
        return result
      }
      await plan.startTurn({ abortSignal: signal })
      request.agentTurnStarted(() => plan.endTurn())
      const result = streamText({
        model,
        messages: modelMessages,
        tools: plan.tools,
        prepareStep,
        stopWhen: stepCountIs(12),
        abortSignal: signal,
        // R105: the SDK signs each approval request with the chat's key and refuses an approval it did not sign.
        experimental_toolApprovalSecret: approvalKeyOf(approvalSecret, chatId),
      })
      let finish!: () => void
      const onFinished = new Promise<void>((resolve) => (finish = resolve))
      const response = result.toUIMessageStreamResponse({
        originalMessages: messages,
        headers: { 'x-plan-mode-instance': instance },
        onFinish: async ({ messages: all, responseMessage, isContinuation }) => {
          try {
            await request.endAgentTurn()
            // R102: the model's later requests start from the fresh context this call began.
            const { handoffStep } = request
            if (handoffStep !== undefined && plan.handoff !== null) {
              const before = isContinuation ? (messages.at(-1)?.parts.length ?? 0) : 0
              const part = before + stepStart(responseMessage.parts.slice(before), handoffStep)
              await saveContext(chatId, { messageId: responseMessage.id, part, text: plan.handoff.text }).catch(() => {})
            }
            // The last thing the turn does: the next request of the chat sees these messages.
            await turn.end(request.taken ? all : undefined, await openCallIdNow()).catch(() => {})
          } finally {
            finish()
          }
        },
        onError: (error) => (error instanceof Error ? error.message : String(error)),
      })
      request.streaming(onFinished)
      await send(res, response)
    } finally {
      await request.close()
    }
  }

  /**
   * R106: the lifecycle of one `POST /api/chat` request that took its chat's turn, in one place:
   * the chat's session it holds, the agent's turn (`turn/start` … `turn/end`), whether the SDK
   * took its messages, the step it handed a plan off at, and its stream's end. `close()` is the one
   * way out, whatever happened before it.
   */
  function chatRequest(turn: ChatTurn) {
    let releaseAgent: (() => void) | undefined
    let endAgentTurn: (() => Promise<void>) | undefined
    let streamEnd: Promise<void> | undefined
    let taken = false
    let handoffStep: number | undefined
    return {
      /** The chat's session stays open until the request has closed (R104): `release` gives it back. */
      holdsAgentUntilClosed(release: () => void) {
        releaseAgent = release
      },
      /** The agent's turn has started (`turn/start` logged): `end` logs its end, once. */
      agentTurnStarted(end: () => Promise<void>) {
        endAgentTurn = end
      },
      /** Ends the agent's turn once it has started, the first time it is called; never rejects. */
      async endAgentTurn() {
        const ending = endAgentTurn
        endAgentTurn = undefined
        await ending?.().catch(() => {})
      },
      /** The SDK took the request (its first step started): only then are its messages saved. */
      takenBySdk() {
        taken = true
      },
      get taken() {
        return taken
      },
      /** A plan was handed off at `step` (R102): the first step noted is the one. */
      handedOffAt(step: number) {
        handoffStep ??= step
      },
      /** The step at which this call handed a plan off (R102), if it did. */
      get handoffStep() {
        return handoffStep
      },
      /** The stream is made: `ended` settles once its `onFinish` has ended the turn. */
      streaming(ended: Promise<void>) {
        streamEnd = ended
      },
      /**
       * Once the stream is made, its onFinish ends the turn, saving what was answered (a review
       * card among it), also after the client went away (R106): ending it here first would give
       * the turn back without the answer. A stream that never finishes is given up on after a
       * lease. Then the agent's turn ends, the chat's turn is given back (unsaved, when onFinish
       * did not end it) and the session released.
       */
      async close() {
        if (streamEnd !== undefined) await waitAtMost(turnLeaseMs, streamEnd)
        await this.endAgentTurn()
        await turn.end().catch(() => {})
        releaseAgent?.()
      },
    }
  }

  /** The review's options, the same for every chat of this service. */
  const reviewOptions = PLAN_MODE_TEXTS.review.question('', planMode.decisions).options

  function state(chatId: string): Promise<ChatState> {
    return withAgent(chatId, (agent) => {
      const open = planMode.openReview(agent)
      return {
        instance,
        mode: planMode.get(agent),
        review: open === null ? null : { reviewId: open.reviewId, title: open.title, plan: open.plan, ...(open.callId ? { callId: open.callId } : {}) },
        versions: currentVersions(agent.session),
        options: reviewOptions,
        chart: { value: planMode.actor(agent).getSnapshot().value },
      }
    })
  }

  function command(chatId: string, input: string) {
    return withAgent(chatId, (agent) => commandOn(agent, input))
  }

  async function commandOn(agent: PlanAgent & { session: PostgresSessionLog }, rawInput: string) {
    // `/plan <message>`: the message is the page's to send as the next user message.
    const steered: UserMessage[] = []
    let result: Awaited<ReturnType<PlanMode['command']['run']>>
    const commandId = randomUUID() // unique across instances: every instance pairs the run with its done (R86)
    await agent.session.append(PLAN_LOG_EVENTS.commandRun, { commandId, name: 'plan', args: rawInput })
    for (let attempt = 1; ; attempt++) {
      steered.length = 0
      result = await planMode.command.run({ agent: { ...agent, steer: (message) => steered.push(message) }, rawInput })
      // Another instance wrote first (R84): nothing was written, and its rows are taken now; decide
      // again on the log as it is, as the user would, so a toggle that can be applied is applied.
      if (result.kind === 'success' || !isSeqTaken(result.text) || attempt === DECISION_ATTEMPTS) break
    }
    await agent.session.append(PLAN_LOG_EVENTS.commandDone, { commandId, kind: result.kind, text: result.text })
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
  function review(chatId: string, checked: ReturnType<typeof reviewAnswerOf>): Promise<ReviewAnswered> {
    return withAgent(chatId, (agent) => reviewOn(agent, checked))
  }

  async function reviewOn(agent: PlanAgent & { session: PostgresSessionLog }, checked: ReturnType<typeof reviewAnswerOf>): Promise<ReviewAnswered> {
    const { reviewId } = checked
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
      return event.type === PLAN_LOG_EVENTS.review && data?.reviewId === reviewId && data.outcome !== 'requested'
    })
    if ('decision' in checked) {
      // R101: what the card shows, and what the model reads in the exit call's result.
      if (checked.decision === PLAN_MODE_TEXTS.review.labels.leave && closing?.data.outcome === 'left') return { outcome: 'left', text: PLAN_MODE_TEXTS.review.messages.left }
      if (checked.decision === PLAN_MODE_TEXTS.review.labels.approveFresh && closing?.data.outcome === 'approved' && closing.data.fresh === true) return { outcome: 'approved', fresh: true }
      throw new Error(`plan review ${reviewId} was answered but its record is not in this instance's log`)
    }
    if (closing === undefined || closing.data.outcome !== 'keep-planning' || typeof closing.data.feedback !== 'string') {
      throw new Error(`plan review ${reviewId} was answered but its record is not in this instance's log`)
    }
    return { outcome: 'keep-planning', feedback: closing.data.feedback }
  }

  const definition = JSON.parse(JSON.stringify(planModeMachine.definition)) as unknown
  const chartLayout = chartLayouts(definition as StateNodeDefinition)

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
    // R104: loopback names only (DNS rebinding); a request that changes anything comes from this server's own page.
    if (!isLoopbackHost(req.headers.host)) throw new HttpError(421, HOST_REFUSED)
    if (req.method !== 'GET' && req.method !== 'HEAD' && !isSameOrigin(req)) throw new HttpError(403, CROSS_SITE_REFUSED)
    // R103: every answer gives a browser without an owner cookie its owner, the page's load first,
    // so that the requests its tabs then send at once all speak for that one owner.
    const owner = ownerOf(req, res, ownerKey)
    const url = new URL(req.url ?? '/', 'http://localhost')
    const path = url.pathname
    if (req.method === 'POST' && path === '/api/chat') {
      const body = await readJson(req)
      return chat(body, owner, res, signal)
    }
    if (req.method === 'GET' && path === '/api/chart') return json(res, 200, definition)
    if (req.method === 'POST' && path === '/api/chart/layout') {
      const { widths } = await readJson(req)
      try {
        return json(res, 200, { layouts: await chartLayout.layoutsFor(widths, signal) })
      } catch (error) {
        if (error instanceof BadWidths) throw new HttpError(400, error.message)
        if (error instanceof ChartTooLarge) throw new HttpError(413, error.message)
        throw error instanceof LayoutBusy ? new HttpError(503, error.message) : error
      }
    }
    const match = /^\/api\/chats\/([^/]+)(\/state|\/command|\/review)?$/.exec(path)
    const reads = req.method === 'GET' && (match?.[2] === undefined || match[2] === '/state')
    const writes = req.method === 'POST' && (match?.[2] === '/command' || match?.[2] === '/review')
    if (match && (reads || writes)) {
      const chatId = chatIdOf(match[1]!) // ids are plain: nothing to decode
      if (match[2] === '/command') {
        // R104: a refused body changes nothing: it is read and checked before the chat is claimed (R103).
        const input = commandInputOf(await readJson(req))
        await checkOwner(chatId, owner, { create: true })
        return json(res, 200, await command(chatId, input))
      }
      if (match[2] === '/review') {
        const answer = reviewAnswerOf(await readJson(req))
        await checkOwner(chatId, owner, { create: true })
        return json(res, 200, await review(chatId, answer))
      }
      await checkOwner(chatId, owner, { create: false }) // R103: a GET creates and claims nothing
      if (match[2] === undefined) return json(res, 200, { messages: await loadMessages(chatId) })
      return json(res, 200, await state(chatId))
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
  // The process's layout worker (R178) is ended when its last server closes.
  const releaseLayoutWorker = holdLayoutWorker()
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    async close() {
      releaseLayoutWorker()
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

/**
 * A `/plan` command's body: `{ input }`, the text typed after `/plan`.
 * @throws HttpError 400 `input must be a string`
 */
function commandInputOf(body: Record<string, unknown>): string {
  if (typeof body.input !== 'string') throw new HttpError(400, 'input must be a string')
  return body.input
}

/** The decisions the route takes (R101): the two the SDK's tool approval cannot carry. */
const ROUTE_DECISIONS: readonly string[] = [PLAN_MODE_TEXTS.review.labels.approveFresh, PLAN_MODE_TEXTS.review.labels.leave]

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

/** The 404 answer's text for a chat of another owner (R103): the words of a chat that does not exist. */
const NO_SUCH_CHAT = 'no such chat'

/** The 400 answer's text for messages that are not UI messages (R104). */
const MESSAGES_REFUSED = 'messages must be an array of AI SDK UI messages ({ id, role, parts })'

/** The 409 answer's text while another request holds the chat's turn (R106). */
const TURN_TAKEN = 'Another answer is being written in this chat; wait for it to end, then send again.'

/** The 409 answer's text for a request that would drop a waiting review card (R106). */
const CARD_LOST = 'This chat changed in another tab: reload the page to answer the open plan review.'

/** How long a request holds its chat's turn without renewing it (R106), unless `turnLeaseMs` says otherwise. */
const DEFAULT_TURN_LEASE_MS = 30_000

/** The shortest turn lease `startWebChat` takes: renewed every third of it, a lease shorter than a query is no lease. */
const MIN_TURN_LEASE_MS = 100

/**
 * R106: a turn lease given by the host is a whole number of ms a timer keeps, at least 100.
 * @throws TypeError('turnLeaseMs must be a whole number of milliseconds from 100 to 2147483647')
 */
const checkTurnLease = (given: unknown) => wholeNumberIn('turnLeaseMs', given, MIN_TURN_LEASE_MS, MAX_TIMEOUT_MS, 'milliseconds')

/**
 * R179: a session bound given by the host is a whole number from 1 to the default.
 * @throws TypeError('maxSessions must be a whole number from 1 to 500')
 */
const checkMaxSessions = (given: unknown) => wholeNumberIn('maxSessions', given, 1, DEFAULT_MAX_SESSIONS)

/** `given` when it is a whole number from `min` to `max`, else a TypeError naming the option, its unit and the range. */
function wholeNumberIn(option: string, given: unknown, min: number, max: number, unit?: string): number {
  if (!Number.isInteger(given) || (given as number) < min || (given as number) > max) {
    throw new TypeError(`${option} must be a whole number ${unit === undefined ? '' : `of ${unit} `}from ${min} to ${max}`)
  }
  return given as number
}

/** How many chats' owners an instance remembers. */
const MAX_OWNERS_KNOWN = 10_000

/** A chat's turn (R106), held by one request: see `takeTurn`. */
interface ChatTurn {
  /** The chat's messages as saved when the turn was taken. */
  readonly saved: ChatMessages
  /**
   * Saves the chat's messages while the turn is held, unless they lack the card of the review the
   * log holds open (its call: `openCallId`) and the saved messages hold it. A save after the turn
   * was lost is dropped, unless it holds that card and the saved messages do not (R106).
   */
  save(messages: ChatMessages, openCallId: string | undefined): Promise<void>
  /**
   * Ends the turn, saving `messages` in the same statement when given, as `save` does. The first
   * call decides (at once, before it awaits anything); later calls get that same ending, and their
   * messages are saved as after a lost turn.
   */
  end(messages?: ChatMessages, openCallId?: string): Promise<void>
}

/** The saved messages of a chat's row, read back as UI messages; none when they are not (a row is data, checked like a request). */
async function savedMessagesOf(value: unknown): Promise<ChatMessages> {
  const checked = await safeValidateUIMessages({ messages: value }).catch(() => null)
  return checked?.success ? (checked.data as ChatMessages) : []
}

/**
 * R106: every review card the saved messages hold waiting for the user (an `exit_plan_mode` call
 * asking for approval, whose review the log does not hold closed: the caller settles those first,
 * R87), and the card of the review the log holds open (`openCallId`: saved or not yet, as while the
 * request that opened it still runs), must come back in the request as it is, or answered through
 * the SDK's approval. A request without it (a tab opened before the plan) or with the call settled
 * some other way (a result the client made up) would replace the saved messages with ones that
 * cannot answer the review.
 * @throws HttpError 409
 */
function refuseLostCards(saved: ChatMessages, messages: ChatMessages, openCallId: string | undefined): void {
  const waiting = new Set(saved.flatMap((m) => m.parts.flatMap((part) => (isExitCall(part) && part.state === 'approval-requested' ? [part.toolCallId] : []))))
  if (openCallId !== undefined) waiting.add(openCallId)
  for (const callId of waiting) {
    if (!holdsOpenCard(messages, callId)) throw new HttpError(409, CARD_LOST)
  }
}

/**
 * R106: what makes a UI message part the card of an open review, one definition for the check in
 * TypeScript (`holdsOpenCard`) and the one in SQL (`SAVED_HOLDS_OPEN_CARD`): an `exit_plan_mode`
 * part of the review's call still asking for approval, or answered in the request that carries it.
 * A settled part is no card, also one of the same call id: some models give every call of a tool
 * the same id (R82), so an earlier call's settled part may carry the open review's call id.
 */
const OPEN_CARD = { type: 'tool-exit_plan_mode', states: ['approval-requested', 'approval-responded'] } as const

/** Whether the messages hold the card of the review whose call is `callId` (see `OPEN_CARD`). */
function holdsOpenCard(messages: ChatMessages, callId: string): boolean {
  return messages.some((m) => m.parts.some((part) => isExitCall(part) && part.toolCallId === callId && (OPEN_CARD.states as readonly string[]).includes(part.state)))
}

/**
 * SQL: whether the row's saved messages (`messages`) hold the card of the review whose call is
 * the parameter `param`, as `holdsOpenCard` tells it (see `OPEN_CARD`; a value of another shape holds none).
 */
const SAVED_HOLDS_OPEN_CARD = (param: string) =>
  `EXISTS (SELECT 1 FROM json_array_elements(CASE WHEN json_typeof(messages) = 'array' THEN messages ELSE '[]'::json END) AS m(message), ` +
  `json_array_elements(CASE WHEN json_typeof(m.message -> 'parts') = 'array' THEN m.message -> 'parts' ELSE '[]'::json END) AS p(part) ` +
  `WHERE p.part ->> 'type' = '${OPEN_CARD.type}' AND p.part ->> 'state' IN (${OPEN_CARD.states.map((state) => `'${state}'`).join(', ')}) ` +
  `AND p.part ->> 'toolCallId' = ${param})`

/** Whether a UI message part is an `exit_plan_mode` call. */
function isExitCall(part: UIMessage['parts'][number]): part is UIMessage['parts'][number] & { type: typeof OPEN_CARD.type; toolCallId: string; state: string } {
  return part.type === OPEN_CARD.type && 'toolCallId' in part
}

/** The owner cookie (R103): a random id, 32 bytes in base64url, then its signature (see `ownerOf`). */
const OWNER_COOKIE = 'plan_mode_owner'
const SIGNED_OWNER_ID = /^([A-Za-z0-9_-]{43})\.([A-Za-z0-9_-]{43})$/

/** The 400 answer's text for a request carrying more than one owner cookie (R103). */
const TWO_OWNER_COOKIES = "more than one plan_mode_owner cookie (a page on another port of this host may have set one): clear this host's cookies, then reload"

/** R103: the key that signs owner ids, derived from the deployment's secret (R105) apart from its approval keys. */
function ownerKeyOf(secret: string): Buffer {
  return createHmac('sha256', secret).update('xstate-plan-mode web chat owner ids').digest()
}

/** An owner id's signature: the HMAC-SHA-256 of the id under the owner key, base64url. */
function ownerSignature(ownerKey: Buffer, id: string): string {
  return createHmac('sha256', ownerKey).update(id).digest('base64url')
}

/**
 * R103: the owner a request speaks for: the hash of the id in its owner cookie, `<id>.<signature>`,
 * taken only when this deployment signed it. Cookies ignore ports, so any page on another port of
 * this host can set one: an id the server did not issue is no owner (the browser gets a new one),
 * and a request carrying two owner cookies (the page set one with a longer Path, which the browser
 * sends first) is refused rather than guessed at. A browser without a valid cookie gets a new
 * random id in an HttpOnly cookie (no script of the page reads it, and no script elsewhere replaces
 * it), SameSite=Strict (no other site's page or link sends it: the page's own requests are all
 * same-site, so Strict costs nothing), for a year. The database keeps only hashes.
 * @throws HttpError 400 for a request carrying more than one owner cookie.
 */
function ownerOf(req: IncomingMessage, res: ServerResponse, ownerKey: Buffer): string {
  const values = (req.headers.cookie ?? '')
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(`${OWNER_COOKIE}=`))
    .map((pair) => pair.slice(OWNER_COOKIE.length + 1))
  if (values.length > 1) throw new HttpError(400, TWO_OWNER_COOKIES)
  const [, given, signature] = SIGNED_OWNER_ID.exec(values[0] ?? '') ?? []
  let id = given
  if (id === undefined || !timingSafeEqual(Buffer.from(signature!), Buffer.from(ownerSignature(ownerKey, id)))) {
    id = randomBytes(32).toString('base64url')
    res.setHeader('set-cookie', `${OWNER_COOKIE}=${id}.${ownerSignature(ownerKey, id)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000`)
  }
  return createHash('sha256').update(id).digest('hex')
}

/**
 * Makes the demo's own tables as it needs them, altering one only when it lacks what it needs:
 * an ALTER TABLE locks the table against every other instance's requests (ACCESS EXCLUSIVE), even
 * when it has nothing to change, and an instance starts while others serve (R106).
 * - `web_chats (id, messages json, owner, turn, turn_until)`: each chat's saved UI messages; the
 *   hash of the owner cookie of the browser that first used it (R103); the request that holds
 *   its turn, and until when (a lease, so that a crashed instance's turn ends, R106).
 * - `web_contexts (id, context json)`: where each chat's model context starts after a handoff
 *   (R102, see `contextOf`).
 * `json`, not `jsonb`: the text is kept as it is, and jsonb cannot hold U+0000 (a user may type
 * it; R83 stores the log's events exactly for the same reason). A column made `jsonb` by an older
 * version is changed once.
 */
async function migrateChatTables(db: PgQueryable): Promise<void> {
  await db.query('CREATE TABLE IF NOT EXISTS web_chats (id text PRIMARY KEY, messages json NOT NULL, owner text, turn text, turn_until timestamptz)')
  await db.query('CREATE TABLE IF NOT EXISTS web_contexts (id text PRIMARY KEY, context json NOT NULL)')
  const columnType = (table: string, column: string) =>
    `(SELECT atttypid FROM pg_attribute WHERE attrelid = '${table}'::regclass AND attname = '${column}' AND NOT attisdropped)`
  await db.query(`DO $do$ BEGIN
    IF ${columnType('web_chats', 'messages')} = 'jsonb'::regtype THEN
      ALTER TABLE web_chats ALTER COLUMN messages TYPE json USING messages::json;
    END IF;
    IF ${columnType('web_chats', 'owner')} IS NULL OR ${columnType('web_chats', 'turn')} IS NULL OR ${columnType('web_chats', 'turn_until')} IS NULL THEN
      ALTER TABLE web_chats ADD COLUMN IF NOT EXISTS owner text, ADD COLUMN IF NOT EXISTS turn text, ADD COLUMN IF NOT EXISTS turn_until timestamptz;
    END IF;
    IF ${columnType('web_contexts', 'context')} = 'jsonb'::regtype THEN
      ALTER TABLE web_contexts ALTER COLUMN context TYPE json USING context::json;
    END IF;
  END $do$`)
}

/**
 * R105: a deployment's approval secret given by its host is at least 32 characters.
 * @throws TypeError('the approval secret must be at least 32 characters')
 */
function checkApprovalSecret(given: unknown): string {
  if (typeof given !== 'string' || given.length < 32) throw new TypeError('the approval secret must be at least 32 characters')
  return given
}

/**
 * R105: the deployment's approval secret: the one given, else the one the database keeps
 * (`web_settings`), generated by the first instance that found none, so that every instance on
 * the database signs and checks with the same.
 * @throws TypeError for a given secret shorter than 32 characters.
 */
async function deploymentSecret(db: PgQueryable, given: string | undefined): Promise<string> {
  if (given !== undefined) return checkApprovalSecret(given)
  await db.query('CREATE TABLE IF NOT EXISTS web_settings (name text PRIMARY KEY, value text NOT NULL)')
  await db.query("INSERT INTO web_settings (name, value) VALUES ('approval-secret', $1) ON CONFLICT (name) DO NOTHING", [randomBytes(32).toString('base64url')])
  const { rows } = await db.query("SELECT value FROM web_settings WHERE name = 'approval-secret'")
  const stored: unknown = rows[0]?.value
  if (typeof stored !== 'string' || stored.length < 32) throw new Error('web_settings holds no approval secret of at least 32 characters')
  return stored
}

/**
 * R105: the key that signs a chat's approvals, derived from the deployment's secret and the chat's
 * id: an approval signed in one chat is refused in every other, also when a model gave both
 * calls the same id.
 */
function approvalKeyOf(secret: string, chatId: string): Uint8Array {
  return createHmac('sha256', secret).update(`xstate-plan-mode web chat approvals\n${chatId}`).digest()
}

function chatIdOf(value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,100}$/.test(value)) throw new HttpError(400, 'a chat id is 1–100 letters, digits, - or _')
  return value
}

/**
 * A JSON route's body (R104): `application/json` (else 415), at most `MAX_BODY` bytes (else 413,
 * as soon as it is passed: the rest is read and dropped, so that the answer reaches the client),
 * nested at most `MAX_JSON_DEPTH` deep (else 400), a JSON object (else 400).
 */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (!isJsonContentType(req.headers['content-type'])) throw new HttpError(415, NOT_JSON)
  if (Number(req.headers['content-length']) > MAX_BODY) throw new HttpError(413, BODY_TOO_LARGE)
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY) return void chunks.push(chunk)
      req.off('data', onData)
      req.resume() // drop the rest
      reject(new HttpError(413, BODY_TOO_LARGE))
    }
    req.on('data', onData)
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.once('error', reject)
  })
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw new HttpError(400, TOO_DEEP)
  try {
    const body = JSON.parse(text) as unknown
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

/**
 * Writes a fetch `Response` (the UI message stream) to Node's response; resolves once the
 * response is closed. When the client went away first, the rest of the stream is read and
 * dropped, so that it runs to its end (its `onFinish` saves the answer, R106) instead of stalling
 * on a buffer nobody reads.
 */
async function send(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => (headers[name] = value))
  res.writeHead(response.status, headers)
  if (response.body === null) return void res.end()
  await new Promise<void>((resolve, reject) => {
    const body = Readable.fromWeb(response.body as never)
    body.on('error', reject)
    res.on('close', () => {
      body.unpipe(res)
      body.resume()
      resolve()
    })
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

/** The built page: `/` and unknown paths are the app; files come from `apps/web/dist` only. */
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
