/**
 * The chat: AI SDK UI's `useChat` against `/api/chat`, plan mode beside it. `/plan`, `/plan off`
 * and `/plan <message>` typed in the composer go to the server as commands, also while an answer
 * streams (the instance running the turn applies them at its next step); a plan the model presents
 * is a review card answered with `addToolApprovalResponse`; the mode, the plan's versions and the
 * agent's statechart come from the server. In an open card the user may click a line of the plan to
 * comment on it (R100): Keep planning then posts the comments to the server first (the SDK's
 * approval response carries a reason string only), and answers the card with the feedback the
 * server recorded. The service offers the whole set of decisions (R101): the card's Approve in a
 * fresh context and Leave plan mode, which the SDK's approve/deny cannot carry either, are posted to
 * the server too, which records them; the card is then settled as the server says (the exit call's
 * result, or its error after a leave) and the chat is sent on without a new message. Everything a
 * model or a user wrote is rendered as text
 * (React escapes it; the markdown renderer drops raw HTML and unsafe links).
 */
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import {
  createContext,
  createElement,
  memo,
  useCallback,
  useContext,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
  type ComponentProps,
  type FormEvent,
  type KeyboardEvent,
  type MouseEvent,
  type ReactNode,
} from 'react'
import Markdown, { type Components, type ExtraProps } from 'react-markdown'
import { Chart } from './Chart.js'

// The server's answers, as the server types them (type-only imports: nothing of the server or the
// library is bundled into the page).
import type { PlanDiffLine as DiffLine } from 'xstate-plan-mode'
import type { ChatState, PlanVersion } from '../server.js'

/** A `/plan` typed in the composer and what it answered, shown in the conversation. */
interface CommandNote {
  id: number
  input: string
  kind: 'success' | 'error'
  text: string
  /** How many messages the chat had when it was typed: it shows after them. */
  after: number
}

const PLAN_COMMAND = /^\/plan(?:\s+([\s\S]*))?$/
/** A word after a `/` at the start (`/plann foo`, `/help`): a command the chat does not have (R118). A path (`/etc/hosts`) is none. */
const SOME_COMMAND = /^\/([A-Za-z][\w-]*)(?=\s|$)/
/** What an unknown command answers (R118), in place of going to the model. */
const unknownCommandText = (name: string) =>
  `Unknown command /${name}. The commands are /plan <task>, /plan and /plan off; to send a message that starts with /, type // instead.`

/**
 * The state of a chat nobody has written in yet: the server holds nothing of it (R103: its GETs
 * answer 404 and create nothing) until the first message or `/plan` creates it.
 */
function newChatState(instance: string): ChatState {
  return { instance, mode: { active: false }, review: null, options: [], versions: [], chart: { value: null } }
}

/** The chat's state as the page shows it: all of `ChatState` but the instance that answered (see {@link useChatState}). */
type ShownState = Omit<ChatState, 'instance'>

/**
 * A value that one small component shows, kept outside React's state: setting it renders that
 * component alone (`useSyncExternalStore`), not the page.
 */
interface SharedValue<T> {
  get(): T
  set(value: T): void
  subscribe(listener: () => void): () => void
}

function sharedValue<T>(initial: T): SharedValue<T> {
  let value = initial
  const listeners = new Set<() => void>()
  return {
    get: () => value,
    set(next) {
      if (Object.is(next, value)) return
      value = next
      for (const listener of listeners) listener()
    },
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}

/**
 * Polls the plan state (any instance answers), and loads it at once when asked. Answers can
 * arrive out of order (different instances): an older request's answer never replaces a newer's.
 * A chat this page made up (`isNew`) exists nowhere yet: it is shown as new, and polled from the
 * first load asked for (the page's first message or command creates it).
 *
 * The instance that answered is kept apart (`instance`, shown by the badge alone): behind a
 * round-robin balancer it changes on every poll, and as part of the state it rendered the whole
 * page again (every message, the chart) at every poll, 2.5 times a second, while nothing else had
 * changed. The rest is set only when its text changed.
 */
function useChatState(chatId: string, isNew: boolean): [ShownState | null, () => void, SharedValue<string>] {
  const [state, setState] = useState<ShownState | null>(isNew ? newChatState('') : null)
  const [instance] = useState(() => sharedValue(''))
  const load = useRef<() => void>(() => {})
  useEffect(() => {
    let stopped = false
    let sent = 0
    let shown = 0
    let timer: ReturnType<typeof setInterval> | undefined
    // The text of the state shown: most polls bring the same state again.
    let shownText = ''
    const fetchState = () => {
      const number = ++sent
      fetch(`/api/chats/${chatId}/state`)
        .then((response) =>
          response.ok
            ? response.text()
            : response.status === 404
              ? JSON.stringify(newChatState(response.headers.get('x-plan-mode-instance') ?? ''))
              : null,
        )
        .then((text) => {
          if (stopped || text === null || number < shown) return
          shown = number
          const { instance: answeredBy, ...rest } = JSON.parse(text) as ChatState
          instance.set(answeredBy)
          const restText = JSON.stringify(rest)
          if (restText === shownText) return
          shownText = restText
          setState(rest)
        })
        .catch(() => {})
    }
    load.current = () => {
      fetchState()
      timer ??= setInterval(fetchState, 400)
    }
    if (!isNew) load.current()
    return () => {
      stopped = true
      clearInterval(timer)
    }
  }, [chatId, isNew, instance])
  return [state, useCallback(() => load.current(), []), instance]
}

/** The instance that answered the last state request (`connecting…` before the first answer). */
function InstanceBadge({ instance, connected }: { instance: SharedValue<string>; connected: boolean }) {
  const name = useSyncExternalStore(instance.subscribe, instance.get)
  return (
    <span className="badge" data-testid="instance" title="The server instance that answered the last state request">
      {!connected ? 'connecting…' : name === '' ? 'new chat' : `instance ${name}`}
    </span>
  )
}

/**
 * Follows new content (R113): while the conversation is scrolled to its end, whatever is added
 * (a streamed reply, a note, a review card) scrolls into view; once the user scrolls away, nothing
 * moves, and `behind` is true until the end is in view again (the page then offers "Jump to
 * latest"). `jump` scrolls to the end and follows again.
 */
function useFollow() {
  const scroller = useRef<HTMLDivElement>(null)
  const content = useRef<HTMLOListElement>(null)
  const following = useRef(true)
  const [behind, setBehind] = useState(false)
  useEffect(() => {
    const box = scroller.current
    const list = content.current
    if (box === null || list === null) return
    const atEnd = () => box.scrollHeight - box.scrollTop - box.clientHeight <= 24
    let last = box.scrollTop
    // Only the reader stops the following, by scrolling up: the browser's own moves (scroll
    // anchoring while content above changes size) go down or nowhere.
    const onScroll = () => {
      if (atEnd()) following.current = true
      else if (box.scrollTop < last) following.current = false
      last = box.scrollTop
      setBehind(!following.current)
    }
    const resized = new ResizeObserver(() => {
      if (following.current) box.scrollTop = box.scrollHeight
      setBehind(!following.current)
    })
    box.addEventListener('scroll', onScroll, { passive: true })
    resized.observe(list)
    resized.observe(box)
    return () => {
      box.removeEventListener('scroll', onScroll)
      resized.disconnect()
    }
  }, [])
  const jump = useCallback(() => {
    following.current = true
    setBehind(false)
    if (scroller.current !== null) scroller.current.scrollTop = scroller.current.scrollHeight
  }, [])
  return { scroller, content, behind, jump }
}

/** Sets `--topbar-height` on the page to the header's height: a phone's conversation fills the rest of the screen. */
function useTopbarHeight() {
  const topbar = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const bar = topbar.current
    if (bar === null) return
    const observer = new ResizeObserver(() => bar.parentElement?.style.setProperty('--topbar-height', `${bar.offsetHeight}px`))
    observer.observe(bar)
    return () => observer.disconnect()
  }, [])
  return topbar
}

export function App({ chatId, initialMessages, isNew = false }: { chatId: string; initialMessages: UIMessage[]; isNew?: boolean }) {
  const transport = useMemo(() => new DefaultChatTransport({ api: '/api/chat' }), [])
  const { messages, sendMessage, setMessages, status, addToolApprovalResponse, error } = useChat({
    id: chatId,
    messages: initialMessages,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  const [state, refresh, instance] = useChatState(chatId, isNew)
  const follow = useFollow()
  const topbar = useTopbarHeight()
  const [draft, setDraft] = useState('')
  const [notes, setNotes] = useState<CommandNote[]>([])
  /** A `/plan <message>` typed while an answer streamed: sent once the chat is ready. */
  const [held, setHeld] = useState<string | null>(null)
  const busy = status === 'submitted' || status === 'streaming'
  const noteIds = useRef(0)
  /** The review the log holds open has its card here, unanswered: the user answers it before writing on. */
  const openCallId = state?.review?.callId
  const reviewWaits =
    openCallId !== undefined &&
    messages.some((m) => m.parts.some((part) => isToolUIPart(part) && part.toolCallId === openCallId && part.state === 'approval-requested'))

  useEffect(() => {
    if (!busy && held !== null) {
      setHeld(null)
      void sendMessage({ text: held })
    }
  }, [busy, held, sendMessage])
  // Not while a message is only submitted: a new chat exists once its answer starts.
  useEffect(() => {
    if (status !== 'submitted' && (messages.length > 0 || status !== 'ready')) refresh()
  }, [status, messages.length, refresh])

  async function runCommand(input: string, rawInput: string) {
    const response = await fetch(`/api/chats/${chatId}/command`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: rawInput }),
    })
    const result = (await response.json()) as { kind?: 'success' | 'error'; text?: string; steered?: string; error?: string }
    const note: CommandNote = {
      id: ++noteIds.current,
      input,
      kind: result.kind ?? 'error',
      text: result.text ?? result.error ?? `the command failed (${response.status})`,
      after: messages.length,
    }
    setNotes((all) => [...all, note])
    refresh()
    if (result.kind === 'success' && result.steered) {
      if (busy) setHeld(result.steered)
      else void sendMessage({ text: result.steered })
    }
  }

  function submit(event: FormEvent) {
    event.preventDefault()
    const text = draft.trim()
    if (text === '') return
    const command = PLAN_COMMAND.exec(text)
    if (command) {
      setDraft('')
      follow.jump()
      void runCommand(text, command[1] ?? '')
      return
    }
    const unknown = SOME_COMMAND.exec(text)
    if (unknown) {
      setDraft('')
      follow.jump()
      setNotes((all) => [...all, { id: ++noteIds.current, input: text, kind: 'error', text: unknownCommandText(unknown[1]!), after: messages.length }])
      return
    }
    if (busy || reviewWaits) return // a message waits for the answer (and for the review); a /plan does not
    setDraft('')
    follow.jump()
    void sendMessage({ text: text.startsWith('//') ? text.slice(1) : text })
  }

  const versionOf = (plan: string) => [...(state?.versions ?? [])].reverse().find((v) => v.plan === plan)
  const answer = (approvalId: string, approved: boolean, reason?: string) => {
    void addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) })
    refresh()
  }
  /**
   * Keep planning with comments (R100): the server records the answer (its one closing record,
   * told in the exit call's result), then the card is answered here with the recorded feedback as
   * the denial's reason, and `useChat` sends the chat on as for any Keep planning: the model reads
   * that feedback once, in the call's result.
   */
  /** The id of the open review the card's call presented, or undefined when the server holds none open for it. */
  const reviewIdOf = async (part: ApprovalPart): Promise<string | undefined> => {
    if (state?.review?.callId === part.toolCallId) return state.review.reviewId
    // The poll has not shown this review yet: ask once now.
    const latest = await fetch(`/api/chats/${chatId}/state`).then((r) => (r.ok ? (r.json() as Promise<ChatState>) : null)).catch(() => null)
    return latest?.review?.callId === part.toolCallId ? latest.review.reviewId : undefined
  }
  const answerWithComments: AnswerWithComments = async (part, feedback, comments) => {
    const reviewId = await reviewIdOf(part)
    if (reviewId === undefined) return 'This plan review is not open on the server; reload the page to see how it ended.'
    let response: Response
    let result: { feedback?: unknown; error?: unknown }
    try {
      response = await fetch(`/api/chats/${chatId}/review`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reviewId, ...(feedback ? { feedback } : {}), comments }),
      })
      result = (await response.json()) as typeof result
    } catch (error) {
      return `The comments could not be sent: ${error instanceof Error ? error.message : String(error)}`
    }
    refresh()
    if (!response.ok || typeof result.feedback !== 'string') {
      return typeof result.error === 'string' ? result.error : `The comments could not be sent (${response.status}).`
    }
    answer(part.approval.id, false, result.feedback)
    return null
  }
  /**
   * Approve in a fresh context, or Leave plan mode (R101): the server records the decision (the
   * review's one closing record, told in the exit call's result) and says how the card ends: with
   * the call's result after a fresh approval, with its error text after a leave, as the server
   * settles a card whose review closed (R87). The card is settled so here, and the chat is sent on
   * without a new message: the model reads the leave once, in the call's result; after a fresh
   * approval the server hands the plan off at the next step (R102).
   */
  const answerDecision: AnswerDecision = async (part, decision) => {
    const reviewId = await reviewIdOf(part)
    if (reviewId === undefined) return 'This plan review is not open on the server; reload the page to see how it ended.'
    let response: Response
    let result: { outcome?: unknown; text?: unknown; error?: unknown }
    try {
      response = await fetch(`/api/chats/${chatId}/review`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reviewId, decision }),
      })
      result = (await response.json()) as typeof result
    } catch (error) {
      return `The decision could not be sent: ${error instanceof Error ? error.message : String(error)}`
    }
    refresh()
    const settled =
      response.ok && result.outcome === 'left' && typeof result.text === 'string'
        ? { state: 'output-error' as const, errorText: result.text }
        : response.ok && result.outcome === 'approved'
          ? { state: 'output-available' as const, output: { approved: true } }
          : undefined
    if (settled === undefined) return typeof result.error === 'string' ? result.error : `The decision could not be sent (${response.status}).`
    setMessages((all) =>
      all.map((message) =>
        message.parts.some((p) => isToolUIPart(p) && p.toolCallId === part.toolCallId)
          ? {
              ...message,
              parts: message.parts.map((p) => {
                if (!isToolUIPart(p) || p.toolCallId !== part.toolCallId) return p
                const { approval: _approval, ...rest } = p as ToolPart & { approval?: unknown }
                return { ...rest, ...settled } as UIMessage['parts'][number]
              }),
            }
          : message,
      ),
    )
    void sendMessage()
    return null
  }

  return (
    <ReviewOptionsContext.Provider value={state?.options ?? []}>
    <div className="web-chat">
      <div className="topbar" ref={topbar}>
        <h1>Plan mode</h1>
        <ModeBadge mode={state?.mode} />
        <InstanceBadge instance={instance} connected={state !== null} />
        <span className="badge" data-testid="status">{busy ? 'answering…' : status === 'error' ? 'error' : 'ready'}</span>
      </div>
      <div className="layout">
        <section className="conversation" aria-label="Chat">
          <div className="scroll-area">
            <div className="scroller" data-testid="scroller" ref={follow.scroller}>
              <ol className="messages" data-testid="messages" ref={follow.content}>
                {notes.filter((n) => n.after === 0).map((note) => <NoteLine key={`n${note.id}`} note={note} />)}
                {messages.map((message, index) => (
                  <MessageItem
                    key={message.id}
                    message={message}
                    versionOf={versionOf}
                    answer={answer}
                    answerWithComments={answerWithComments}
                    answerDecision={answerDecision}
                    progress={index < messages.length - 1 ? 'ended' : busy ? 'running' : status === 'error' ? 'failed' : 'ended'}
                    after={notes.filter((n) => n.after === index + 1)}
                  />
                ))}
              </ol>
            </div>
            {follow.behind && (
              <button type="button" className="jump" data-testid="jump" onClick={follow.jump}>
                Jump to latest ↓
              </button>
            )}
          </div>
          {error && <p className="chat-error" role="alert">{error.message}</p>}
          <form className="composer" onSubmit={submit}>
            <textarea
              aria-label="Message"
              data-testid="composer"
              value={draft}
              placeholder={
                busy
                  ? 'Answering… /plan off still applies'
                  : reviewWaits
                    ? 'Answer the plan above, or /plan off'
                    : 'Message, or /plan <task>'
              }
              onChange={(event) => setDraft(event.target.value)}
              onKeyDown={(event) => {
                if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) submit(event)
              }}
              rows={2}
              maxLength={8000}
            />
            <button
              type="submit"
              data-testid="send"
              disabled={draft.trim() === '' || ((busy || reviewWaits) && !PLAN_COMMAND.test(draft.trim()) && !SOME_COMMAND.test(draft.trim()))}
            >
              Send
            </button>
          </form>
        </section>
        <aside className="side" aria-label="Plan mode">
          <section>
            <h2>Plan versions</h2>
            <Versions versions={state?.versions ?? []} />
          </section>
          <section className="chart-section">
            <h2>Statechart (this agent, live)</h2>
            <Chart value={state?.chart.value} />
          </section>
        </aside>
      </div>
    </div>
    </ReviewOptionsContext.Provider>
  )
}

/** `plan` or `default`, and the switch waiting for the next step. */
function ModeBadge({ mode }: { mode: ChatState['mode'] | undefined }) {
  if (mode === undefined) return <span className="badge mode" data-testid="mode">…</span>
  const waiting = mode.pending !== undefined && mode.pending !== mode.active
  return (
    <span className="badge mode" data-testid="mode" data-mode={mode.active ? 'plan' : 'default'} data-pending={waiting ? String(mode.pending) : undefined}>
      {mode.active ? 'plan' : 'default'}
      {waiting && (mode.pending ? ' · entering at the next step' : ' · leaving at the next step')}
    </span>
  )
}

function NoteLine({ note }: { note: CommandNote }) {
  return (
    <li className={`note ${note.kind}`} data-testid="command-note">
      <code>{note.input}</code> {note.text}
    </li>
  )
}

type Answer = (approvalId: string, approved: boolean, reason?: string) => void

/** One comment anchored to the plan (R100): `quote` is an exact excerpt of the plan under review. */
interface PlanComment {
  quote: string
  text: string
  /** The plan's line (1-based) the comment was made on, to mark it. */
  line: number
}

/** Keep planning with comments; resolves `null` once the card is answered, else the error to show. */
type AnswerWithComments = (part: ApprovalPart, feedback: string, comments: { quote: string; text: string }[]) => Promise<string | null>

/** The two decisions posted to the server (R101), by their labels in the review's question. */
const FRESH_DECISION = 'Approve in a fresh context'
const LEAVE_DECISION = 'Leave plan mode'
type Decision = typeof FRESH_DECISION | typeof LEAVE_DECISION
/** The exit call's error after Leave plan mode (R101): the card says it in the user's words. */
const LEFT_TEXT = 'The user left plan mode without carrying out the plan; stop here and wait for their message.'

/** Approve in a fresh context or Leave plan mode; resolves `null` once the card is settled and the chat sent on, else the error to show. */
type AnswerDecision = (part: ApprovalPart, decision: Decision) => Promise<string | null>

function MessageItem({
  message,
  versionOf,
  answer,
  answerWithComments,
  answerDecision,
  progress,
  after,
}: {
  message: UIMessage
  versionOf: (plan: string) => PlanVersion | undefined
  answer: Answer
  answerWithComments: AnswerWithComments
  answerDecision: AnswerDecision
  progress: Progress
  after: CommandNote[]
}) {
  return (
    <>
      <li className={`message ${message.role}`} data-role={message.role}>
        {message.parts.map((part, index) => {
          if (part.type === 'text') {
            // The model's text is markdown, rendered as the plan is (R115); the user's is shown as typed.
            return message.role === 'assistant' ? (
              <div key={index} className="text markdown" data-testid="assistant-text">
                <PlanMarkdown text={part.text} />
              </div>
            ) : (
              <p key={index} className="text">{part.text}</p>
            )
          }
          if (!isToolUIPart(part)) return null
          const name = getToolName(part)
          if (name === 'exit_plan_mode') {
            return (
              <PlanCard
                key={index}
                part={part}
                versionOf={versionOf}
                answer={answer}
                answerWithComments={answerWithComments}
                answerDecision={answerDecision}
                progress={progress}
              />
            )
          }
          return (
            <p key={index} className="tool" data-testid="tool-call">
              <span className="tool-name">{name}</span> <span className="tool-input">{summarize(part.input)}</span>
              {part.state === 'output-error' && <span className="tool-error"> {part.errorText}</span>}
            </p>
          )
        })}
      </li>
      {after.map((note) => <NoteLine key={`n${note.id}`} note={note} />)}
    </>
  )
}

function summarize(input: unknown): string {
  if (input === undefined) return ''
  const text = JSON.stringify(input)
  return text.length > 120 ? `${text.slice(0, 117)}…` : text
}

type ToolPart = Extract<UIMessage['parts'][number], { toolCallId: string }>
type ApprovalPart = Extract<ToolPart, { state: 'approval-requested' }>

/**
 * Where the answer a message belongs to is: still being written (`running`), stopped by an error
 * (`failed`), or over. An approved plan is carried out in the answer that holds its card (R117).
 */
type Progress = 'running' | 'failed' | 'ended'

/** What an approved card says (R117): carrying the plan out while its answer runs, carried out once it has ended. */
function approvedOutcome(fresh: boolean, progress: Progress): string {
  const approved = fresh ? 'Approved in a fresh context' : 'Approved'
  return progress === 'running' ? `${approved}: carrying it out` : progress === 'failed' ? `${approved}: carrying it out stopped with an error` : `${approved} and carried out`
}

/** A plan the model presented: the review while it waits for the user, its outcome after. */
function PlanCard({
  part,
  versionOf,
  answer,
  answerWithComments,
  answerDecision,
  progress,
}: {
  part: ToolPart
  versionOf: (plan: string) => PlanVersion | undefined
  answer: Answer
  answerWithComments: AnswerWithComments
  answerDecision: AnswerDecision
  progress: Progress
}) {
  const [feedback, setFeedback] = useState('')
  const [comments, setComments] = useState<PlanComment[]>([])
  /** The line whose comment box is open, and what is typed in it. */
  const [commenting, setCommenting] = useState<{ line: number; quote: string; label: string } | null>(null)
  const [draft, setDraft] = useState('')
  const [sending, setSending] = useState(false)
  const [sendError, setSendError] = useState<string | null>(null)
  const plan = typeof (part.input as { plan?: unknown } | undefined)?.plan === 'string' ? (part.input as { plan: string }).plan : ''
  const version = versionOf(plan)
  const title = version ? `Plan v${version.version}` : 'Plan'
  // Unanswered here, closed in the log (a /plan superseded it, or another tab answered it).
  const closedElsewhere = part.state === 'approval-requested' && version !== undefined && version.outcome !== 'open'
  const outcome = closedElsewhere
    ? version.outcome === 'superseded'
      ? 'Closed: the mode was switched'
      : version.outcome === 'left'
        ? 'Closed: plan mode was left without carrying out the plan'
        : `Closed (${version.outcome}${version.fresh ? ', fresh context' : ''})`
    : part.state === 'output-available'
      ? approvedOutcome(version?.fresh === true, progress)
      : part.state === 'output-denied'
        ? `Kept planning${part.approval.reason ? `: ${part.approval.reason}` : ''}`
        : part.state === 'output-error'
          ? version?.outcome === 'left' || part.errorText === LEFT_TEXT
            ? 'Left plan mode without carrying out the plan'
            : part.errorText
          : part.state === 'approval-responded'
            ? part.approval.approved
              ? 'Approved'
              : 'Keep planning sent'
            : null
  const open = part.state === 'approval-requested' && !closedElsewhere
  const marks = useMemo(
    () => (open ? { selected: commenting?.line ?? null, commented: new Set(comments.map((c) => c.line)) } : null),
    [open, commenting, comments],
  )

  const startComment = (line: number, quote: string, label: string) => {
    setCommenting({ line, quote, label })
    setDraft('')
  }
  const addComment = () => {
    if (commenting === null || draft.trim() === '') return
    setComments((all) => [...all, { line: commenting.line, quote: commenting.quote, text: draft.trim() }])
    setCommenting(null)
    setDraft('')
    setSendError(null)
  }
  async function decide(approvalPart: ApprovalPart, decision: Decision) {
    setSending(true)
    setSendError(null)
    const error = await answerDecision(approvalPart, decision)
    setSending(false)
    if (error !== null) setSendError(error)
  }
  async function keepPlanning(approvalPart: ApprovalPart) {
    // A comment typed but not added yet goes too: the user pressed Keep planning with it in view.
    const all = commenting !== null && draft.trim() !== '' ? [...comments, { line: commenting.line, quote: commenting.quote, text: draft.trim() }] : comments
    const text = feedback.trim()
    if (all.length === 0) return answer(approvalPart.approval.id, false, text || undefined)
    setSending(true)
    setSendError(null)
    const error = await answerWithComments(approvalPart, text, all.map(({ quote, text: said }) => ({ quote, text: said })))
    setSending(false)
    if (error !== null) {
      setComments(all)
      setCommenting(null)
      setDraft('')
      setSendError(error)
    }
  }

  return (
    <article className="plan-card" data-testid="plan-card" data-state={closedElsewhere ? 'closed' : part.state}>
      <header>
        <strong>{title}</strong>
        {outcome && <span className="plan-outcome" data-testid="plan-outcome">{outcome}</span>}
      </header>
      <div className="plan-body" data-testid="plan-body">
        {part.state === 'input-streaming' ? (
          <p className="hint">Writing the plan…</p>
        ) : (
          <PlanMarkdown text={plan} marks={marks} onLine={open && !sending ? startComment : undefined} />
        )}
      </div>
      {open && commenting === null && comments.length === 0 && <p className="hint comment-hint">Click a line of the plan to comment on it.</p>}
      {open && commenting !== null && (
        <div className="comment-box" data-testid="comment-box" role="group" aria-label={`Comment on ${commenting.label}`}>
          <p className="comment-on">
            <span data-testid="comment-on">On {commenting.label}:</span> <q className="comment-quote" data-testid="comment-quote">{commenting.quote}</q>
          </p>
          <textarea
            aria-label="Comment"
            data-testid="comment-text"
            placeholder="Your comment on this line"
            value={draft}
            maxLength={4000}
            rows={2}
            autoFocus
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === 'Enter' && (event.metaKey || event.ctrlKey)) addComment()
              if (event.key === 'Escape') setCommenting(null)
            }}
          />
          <div className="comment-buttons">
            <button type="button" data-testid="add-comment" disabled={draft.trim() === ''} onClick={addComment}>
              Add comment
            </button>
            <button type="button" data-testid="cancel-comment" onClick={() => setCommenting(null)}>
              Cancel
            </button>
          </div>
        </div>
      )}
      {open && comments.length > 0 && (
        <section className="comments" aria-label="Comments on the plan">
          <p className="hint">
            {comments.length === 1 ? '1 comment' : `${comments.length} comments`}, sent with Keep planning:
          </p>
          <ol className="comment-list" data-testid="comments">
            {comments.map((comment, index) => (
              <li key={index} className="comment" data-testid="comment">
                <span className="comment-n" aria-hidden="true">{index + 1}.</span>
                <span className="comment-body">
                  <q className="comment-quote">{comment.quote}</q> <span className="comment-said">{comment.text}</span>
                </span>
                <button
                  type="button"
                  className="remove-comment"
                  data-testid="remove-comment"
                  aria-label={`Remove comment ${index + 1}`}
                  disabled={sending}
                  onClick={() => setComments((all) => all.filter((_, i) => i !== index))}
                >
                  Remove
                </button>
              </li>
            ))}
          </ol>
        </section>
      )}
      {open && sendError !== null && (
        <p className="review-error" data-testid="review-error" role="alert">
          {sendError}
        </p>
      )}
      {open && version?.diff && (
        <details className="card-diff" data-testid="card-diff">
          <summary>
            Changes from v{version.version - 1} <DiffCounts lines={version.diff} />
          </summary>
          <PlanDiff lines={version.diff} />
        </details>
      )}
      {open && (
        <div className="plan-actions">
          <button
            type="button"
            className="approve"
            data-testid="approve"
            disabled={sending || comments.length > 0}
            title={comments.length > 0 ? 'Comments ask for changes: send them with Keep planning, or remove them to approve' : undefined}
            onClick={() => answer(part.approval.id, true)}
          >
            Approve
          </button>
          <DecisionButton
            label={FRESH_DECISION}
            testId="approve-fresh"
            disabled={sending}
            blockedBy={comments.length > 0 ? 'Comments ask for changes: send them with Keep planning, or remove them to approve' : null}
            onDecide={() => void decide(part, FRESH_DECISION)}
          />
          <textarea
            aria-label="Feedback"
            data-testid="feedback"
            placeholder="What should change? (optional)"
            value={feedback}
            maxLength={4000}
            rows={2}
            onChange={(event) => setFeedback(event.target.value)}
            onKeyDown={(event) => {
              // Enter sends, as in the composer; Shift+Enter is a new line (R118).
              if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return
              event.preventDefault()
              if (!sending) void keepPlanning(part)
            }}
          />
          <button type="button" data-testid="keep-planning" disabled={sending} onClick={() => void keepPlanning(part)}>
            {sending ? 'Sending…' : 'Keep planning'}
          </button>
          <DecisionButton
            label={LEAVE_DECISION}
            testId="leave"
            disabled={sending}
            blockedBy={comments.length > 0 ? 'Comments ask for changes: send them with Keep planning, or remove them to leave plan mode' : null}
            onDecide={() => void decide(part, LEAVE_DECISION)}
          />
        </div>
      )}
    </article>
  )
}

/** A node of the markdown tree (mdast), as much of it as `htmlAsText` reads. */
interface MarkdownNode {
  type: string
  children?: MarkdownNode[]
}

/**
 * A remark plugin: raw HTML in a plan is shown as the text it is, never parsed as markup (the
 * renderer would otherwise drop it silently).
 */
function htmlAsText() {
  const visit = (node: MarkdownNode) => {
    if (node.type === 'html') node.type = 'text'
    node.children?.forEach(visit)
  }
  return visit
}

/** The lines an open card marks: the one being commented on, and those that have comments. */
interface LineMarks {
  selected: number | null
  commented: ReadonlySet<number>
}

/** Set by an open card's plan: its blocks then name their lines in the plan (`data-line`). */
const LineMarksContext = createContext<LineMarks | null>(null)

/** The review's options as the library words them (`ChatState.options`, R43, R101): the buttons' tooltips. */
const ReviewOptionsContext = createContext<ChatState['options']>([])

/**
 * One of the decisions R101 adds, as a button: its label, the library's description as its
 * tooltip, and the reason it is disabled (`blockedBy`) in place of the description when it is.
 */
function DecisionButton({ label, testId, disabled, blockedBy, onDecide }: { label: Decision; testId: string; disabled: boolean; blockedBy: string | null; onDecide: () => void }) {
  const description = useContext(ReviewOptionsContext).find((option) => option.label === label)?.description
  return (
    <button type="button" className={testId} data-testid={testId} disabled={disabled || blockedBy !== null} title={blockedBy ?? description} onClick={onDecide}>
      {label}
    </button>
  )
}

/** The blocks a comment can be anchored to: each names the plan's line where it starts. */
const LINE_TAGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'li', 'pre', 'tr', 'blockquote'] as const

/** Children of a list item that are blocks of their own: the item's own text ends before them. */
const NESTED_BLOCKS = new Set(['ul', 'ol', 'pre', 'blockquote', 'table', 'p'])

/**
 * A block of the rendered plan, marked with the plan's lines it is written on (from the markdown
 * parser's positions): `data-line` (first) and `data-line-end` (last; for a list item, the last
 * line of its own text, before any nested block). Only inside an open card.
 */
function lineBlock(tag: (typeof LINE_TAGS)[number]) {
  function LineBlock({ node, className, ...props }: Record<string, unknown> & ExtraProps & { className?: string }) {
    const marks = useContext(LineMarksContext)
    const start = node?.position?.start.line
    let end = node?.position?.end.line
    if (marks === null || start === undefined || end === undefined) return createElement(tag, { ...props, className })
    if (tag === 'li') {
      const nested = node!.children.find((child) => child.type === 'element' && NESTED_BLOCKS.has(child.tagName) && child.position !== undefined)
      if (nested?.position) end = Math.max(start, nested.position.start.line - 1)
    }
    const classes = [className, 'plan-line', marks.selected === start ? 'commenting' : '', marks.commented.has(start) ? 'commented' : '']
    return createElement(tag, {
      ...props,
      className: classes.filter(Boolean).join(' '),
      'data-line': start,
      'data-line-end': end,
      tabIndex: 0,
    })
  }
  return LineBlock
}

/** A link in rendered markdown opens in a new tab and gives the page it opens no handle on this one (unsafe URLs are already removed). */
function SafeLink({ node: _node, ...props }: ComponentProps<'a'> & ExtraProps) {
  return <a {...props} target="_blank" rel="noopener noreferrer nofollow" />
}

const TEXT_COMPONENTS: Components = { a: SafeLink }
const LINE_COMPONENTS = { ...Object.fromEntries(LINE_TAGS.map((tag) => [tag, lineBlock(tag)])), a: SafeLink } as Components

/** What a block is called where the card names it (R114): a numbered line by the number shown beside it. */
const BLOCK_NAMES: Readonly<Record<string, string>> = { PRE: 'the code block', BLOCKQUOTE: 'the quote', TR: 'the table row', P: 'the paragraph' }

/**
 * The name of a block of the rendered plan (inside `plan`), as a reader sees it: `step 3` for the
 * third item of a numbered list (`step 2.1` for the first item of a list numbered inside step 2),
 * `the heading`, `the bullet`, `the paragraph`…
 */
function blockName(block: Element, plan: Element): string {
  if (block.tagName === 'LI') {
    const numbers: number[] = []
    const outer = (item: Element) => {
      const next = item.parentElement?.closest('li') ?? null
      return next !== null && plan.contains(next) ? next : null
    }
    for (let item: Element | null = block; item !== null; item = outer(item)) {
      const list = item.parentElement
      if (!(list instanceof HTMLOListElement)) break
      numbers.unshift(list.start + Array.prototype.indexOf.call(list.children, item))
    }
    return numbers.length > 0 && block.parentElement instanceof HTMLOListElement ? `step ${numbers.join('.')}` : 'the bullet'
  }
  if (/^H[1-6]$/.test(block.tagName)) return 'the heading'
  return BLOCK_NAMES[block.tagName] ?? 'the line'
}

const FENCE = /^\s*(?:```|~~~)/

/**
 * The quote a click on a block anchors to (R100): the plan's line the block is written on (all its
 * lines for a block written on several, a code block without its fences), without its indentation,
 * its heading, list or block-quote marker and its trailing spaces, as the terminal chat quotes a
 * line (`lineQuote` of apps/cli/chat.ts): the words, not the markup, so that the quote still names them
 * when a revision renumbers the list. Always one piece of the plan, hence an exact excerpt of it;
 * the trimmed line when nothing but a marker is left.
 */
function quoteOf(plan: string, start: number, end: number, tag: string): string {
  let lines = plan.split('\n').slice(start - 1, end)
  if (tag === 'pre' && lines.length > 2 && FENCE.test(lines[0]!)) lines = FENCE.test(lines.at(-1)!) ? lines.slice(1, -1) : lines.slice(1)
  const block = lines.join('\n')
  const marker = /^[ \t]*(?:#{1,6}[ \t]+|>[ \t]*|(?:[-*+]|\d{1,9}[.)])[ \t]+)?/.exec(block)![0]
  const quote = block.slice(marker.length).trimEnd()
  return quote === '' ? block.trim() : quote
}

const REMARK_PLUGINS = [htmlAsText]

/**
 * A text rendered as markdown, parsed again only when the text changes: the page renders again on
 * every streamed chunk and every new state, and parsing each message's and each version's
 * markdown each time was most of the page's script time. With `lines`, its blocks name their
 * lines (`LINE_COMPONENTS`), marked from `LineMarksContext`, which reaches them through the memo.
 */
const MarkdownText = memo(function MarkdownText({ text, lines }: { text: string; lines: boolean }) {
  return <Markdown remarkPlugins={REMARK_PLUGINS} components={lines ? LINE_COMPONENTS : TEXT_COMPONENTS}>{text}</Markdown>
})

/**
 * A plan as markdown: headings, lists, code; HTML as text, unsafe links removed (react-markdown's
 * default). With `onLine` (an open review card), each block can be clicked (or focused and
 * Enter pressed) to comment on the plan's line it is written on.
 */
function PlanMarkdown({ text, marks = null, onLine }: { text: string; marks?: LineMarks | null; onLine?: ((line: number, quote: string, label: string) => void) | undefined }) {
  const pick = (target: EventTarget, container: Element) => {
    const block = (target as Element).closest?.('[data-line]')
    if (!block || !container.contains(block) || (target as Element).closest('a')) return
    const start = Number(block.getAttribute('data-line'))
    const end = Number(block.getAttribute('data-line-end') ?? start)
    const quote = quoteOf(text, start, end, block.tagName.toLowerCase())
    if (quote !== '' && text.includes(quote)) onLine?.(start, quote, blockName(block, container))
  }
  const onClick = (event: MouseEvent<HTMLDivElement>) => {
    if (window.getSelection()?.isCollapsed === false) return // selecting text to copy it, not commenting
    pick(event.target, event.currentTarget)
  }
  const onKeyDown = (event: KeyboardEvent<HTMLDivElement>) => {
    if (event.key !== 'Enter' && event.key !== ' ') return
    if (!(event.target as Element).matches('[data-line]')) return
    event.preventDefault()
    pick(event.target, event.currentTarget)
  }
  const markdown = <MarkdownText text={text} lines={onLine !== undefined} />
  if (!onLine) return markdown
  return (
    <LineMarksContext.Provider value={marks}>
      <div className="plan-lines" data-testid="plan-lines" title="Click a line to comment on it" onClick={onClick} onKeyDown={onKeyDown}>
        {markdown}
      </div>
    </LineMarksContext.Provider>
  )
}

/**
 * Every plan of the current planning episode, newest first; each opens to its text, and each after
 * the first shows what changed from the previous version.
 */
function Versions({ versions }: { versions: ChatState['versions'] }) {
  if (versions.length === 0) return <p className="hint">No plan presented yet.</p>
  return (
    <ol className="versions" data-testid="versions">
      {[...versions].reverse().map((v) => (
        <li key={v.version} data-testid="version" data-outcome={v.outcome}>
          <details>
            <summary>
              v{v.version} · {v.title} <span className="hint">({v.outcome}{v.fresh ? ', fresh context' : ''}{v.by === 'policy' ? ', by policy' : ''})</span>
            </summary>
            <div className="plan-body">
              <PlanMarkdown text={v.plan} />
            </div>
          </details>
          {v.feedback !== undefined && (
            <p className="version-feedback" data-testid="version-feedback">
              Feedback: {v.feedback}
            </p>
          )}
          {v.diff && (
            <div className="version-changes">
              <p className="hint">
                Changes from v{v.version - 1} <DiffCounts lines={v.diff} />
              </p>
              <PlanDiff lines={v.diff} />
            </div>
          )}
        </li>
      ))}
    </ol>
  )
}

/** `+3 −1`: how many lines a diff adds and removes. */
function DiffCounts({ lines }: { lines: readonly DiffLine[] }) {
  const added = lines.filter((line) => line.kind === 'added').length
  const removed = lines.filter((line) => line.kind === 'removed').length
  return (
    <span className="diff-counts">
      <span className="diff-added">+{added}</span> <span className="diff-removed">−{removed}</span>
    </span>
  )
}

/** Kept lines farther than this from any change are folded… */
const DIFF_CONTEXT = 2
/** …when at least this many of them are together (a fold no shorter than what it hides). */
const MIN_FOLD = 2

const MARK: Readonly<Record<DiffLine['kind'], string>> = { added: '+', removed: '−', same: ' ' }

/**
 * A line diff between two versions of a plan, as text (never markup): `+` added, `−` removed,
 * kept lines muted; long runs of kept lines far from any change fold into one line that opens them.
 */
function PlanDiff({ lines }: { lines: readonly DiffLine[] }) {
  const [opened, setOpened] = useState<ReadonlySet<number>>(new Set())
  const changed = lines.map((line) => line.kind !== 'same')
  if (!changed.includes(true)) {
    return (
      <div className="plan-diff" data-testid="version-diff">
        <p className="hint">No change.</p>
      </div>
    )
  }
  const far = lines.map((_, i) => !changed.slice(Math.max(0, i - DIFF_CONTEXT), i + DIFF_CONTEXT + 1).includes(true))
  const rows: ReactNode[] = []
  for (let i = 0; i < lines.length; ) {
    let end = i
    while (end < lines.length && far[end]) end++
    if (end - i >= MIN_FOLD && !opened.has(i)) {
      const start = i
      rows.push(
        <button
          key={`fold${start}`}
          type="button"
          className="diff-line diff-fold"
          data-testid="diff-line"
          data-kind="fold"
          onClick={() => setOpened((all) => new Set(all).add(start))}
          title="Show the unchanged lines"
        >
          <span className="diff-mark" aria-hidden="true">⋯</span>
          <span className="diff-text">{end - start} unchanged lines</span>
        </button>,
      )
      i = end
      continue
    }
    const last = Math.max(end, i + 1)
    for (; i < last; i++) {
      const line = lines[i]!
      rows.push(
        <div key={i} className="diff-line" data-testid="diff-line" data-kind={line.kind}>
          <span className="diff-mark">{MARK[line.kind]}</span>
          <span className="diff-text">{line.text}</span>
        </div>,
      )
    }
  }
  return (
    <div className="plan-diff" data-testid="version-diff" role="group" aria-label="Changes">
      {rows}
    </div>
  )
}
