/**
 * The chat: AI SDK UI's `useChat` against `/api/chat`, plan mode beside it. `/plan`, `/plan off`
 * and `/plan <message>` typed in the composer go to the server as commands, also while an answer
 * streams (the instance running the turn applies them at its next step); a plan the model presents
 * is a review card answered with `addToolApprovalResponse`; the mode, the plan's versions and the
 * agent's statechart come from the server. Everything a model or a user wrote is rendered as text
 * (React escapes it; the markdown renderer drops raw HTML and unsafe links).
 */
import { useChat } from '@ai-sdk/react'
import { DefaultChatTransport, getToolName, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai'
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react'
import Markdown from 'react-markdown'
import { Chart } from './Chart.js'

/** What `GET /api/chats/:id/state` answers (web/server.ts `ChatState`). */
interface ChatState {
  instance: string
  mode: { active: boolean; pending?: boolean }
  review: { reviewId: string; title: string; plan: string; callId?: string } | null
  versions: PlanVersion[]
  chart: { value: unknown }
}

/** One plan of the current planning episode (web/server.ts `PlanVersion`, the library's R96 history). */
interface PlanVersion {
  version: number
  title: string
  plan: string
  outcome: string
  feedback?: string
  by?: 'policy'
  /** For versions after the first: the line diff from the previous version (R97). */
  diff?: DiffLine[]
}

/** One line of a plan diff (the library's `PlanDiffLine`). */
interface DiffLine {
  kind: 'same' | 'added' | 'removed'
  text: string
}

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

/**
 * Polls the plan state (any instance answers), and loads it at once when asked. Answers can
 * arrive out of order (different instances): an older request's answer never replaces a newer's.
 */
function useChatState(chatId: string): [ChatState | null, () => void] {
  const [state, setState] = useState<ChatState | null>(null)
  const load = useRef<() => void>(() => {})
  useEffect(() => {
    let stopped = false
    let sent = 0
    let shown = 0
    load.current = () => {
      const number = ++sent
      fetch(`/api/chats/${chatId}/state`)
        .then((response) => (response.ok ? (response.json() as Promise<ChatState>) : null))
        .then((next) => {
          if (stopped || next === null || number < shown) return
          shown = number
          setState(next)
        })
        .catch(() => {})
    }
    load.current()
    const timer = setInterval(() => load.current(), 400)
    return () => {
      stopped = true
      clearInterval(timer)
    }
  }, [chatId])
  return [state, useCallback(() => load.current(), [])]
}

export function App({ chatId, initialMessages }: { chatId: string; initialMessages: UIMessage[] }) {
  const transport = useMemo(() => new DefaultChatTransport({ api: '/api/chat' }), [])
  const { messages, sendMessage, status, addToolApprovalResponse, error } = useChat({
    id: chatId,
    messages: initialMessages,
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  })
  const [state, refresh] = useChatState(chatId)
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
  useEffect(refresh, [status, messages.length, refresh])

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
      void runCommand(text, command[1] ?? '')
      return
    }
    if (busy || reviewWaits) return // a message waits for the answer (and for the review); a /plan does not
    setDraft('')
    void sendMessage({ text })
  }

  const versionOf = (plan: string) => [...(state?.versions ?? [])].reverse().find((v) => v.plan === plan)
  const answer = (approvalId: string, approved: boolean, reason?: string) => {
    void addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) })
    refresh()
  }

  return (
    <div className="web-chat">
      <div className="topbar">
        <h1>Plan mode</h1>
        <ModeBadge mode={state?.mode} />
        <span className="badge" data-testid="instance" title="The server instance that answered the last state request">
          {state ? `instance ${state.instance}` : 'connecting…'}
        </span>
        <span className="badge" data-testid="status">{busy ? 'answering…' : status === 'error' ? 'error' : 'ready'}</span>
      </div>
      <div className="layout">
        <section className="conversation" aria-label="Chat">
          <ol className="messages" data-testid="messages">
            {notes.filter((n) => n.after === 0).map((note) => <NoteLine key={`n${note.id}`} note={note} />)}
            {messages.map((message, index) => (
              <MessageItem key={message.id} message={message} versionOf={versionOf} answer={answer} after={notes.filter((n) => n.after === index + 1)} />
            ))}
          </ol>
          {error && <p className="chat-error" role="alert">{error.message}</p>}
          <form className="composer" onSubmit={submit}>
            <textarea
              aria-label="Message"
              data-testid="composer"
              value={draft}
              placeholder={
                busy
                  ? 'Answering… /plan and /plan off still apply at the next step'
                  : reviewWaits
                    ? 'Answer the plan review first (Approve or Keep planning), or type /plan off'
                    : 'Message, /plan <task>, /plan off'
              }
              onChange={(event) => setDraft(event.target.value)}
              onKeyDown={(event) => {
                if (event.key === 'Enter' && !event.shiftKey) submit(event)
              }}
              rows={2}
              maxLength={8000}
            />
            <button type="submit" data-testid="send" disabled={draft.trim() === '' || ((busy || reviewWaits) && !PLAN_COMMAND.test(draft.trim()))}>
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

function MessageItem({
  message,
  versionOf,
  answer,
  after,
}: {
  message: UIMessage
  versionOf: (plan: string) => PlanVersion | undefined
  answer: Answer
  after: CommandNote[]
}) {
  return (
    <>
      <li className={`message ${message.role}`} data-role={message.role}>
        {message.parts.map((part, index) => {
          if (part.type === 'text') return <p key={index} className="text">{part.text}</p>
          if (!isToolUIPart(part)) return null
          const name = getToolName(part)
          if (name === 'exit_plan_mode') return <PlanCard key={index} part={part} versionOf={versionOf} answer={answer} />
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

/** A plan the model presented: the review while it waits for the user, its outcome after. */
function PlanCard({ part, versionOf, answer }: { part: ToolPart; versionOf: (plan: string) => PlanVersion | undefined; answer: Answer }) {
  const [feedback, setFeedback] = useState('')
  const plan = typeof (part.input as { plan?: unknown } | undefined)?.plan === 'string' ? (part.input as { plan: string }).plan : ''
  const version = versionOf(plan)
  const title = version ? `Plan v${version.version}` : 'Plan'
  // Unanswered here, closed in the log (a /plan superseded it, or another tab answered it).
  const closedElsewhere = part.state === 'approval-requested' && version !== undefined && version.outcome !== 'open'
  const outcome = closedElsewhere
    ? version.outcome === 'superseded'
      ? 'Closed: the mode was switched'
      : `Closed (${version.outcome})`
    : part.state === 'output-available'
      ? 'Approved: carrying it out'
      : part.state === 'output-denied'
        ? `Kept planning${part.approval.reason ? `: ${part.approval.reason}` : ''}`
        : part.state === 'output-error'
          ? part.errorText
          : part.state === 'approval-responded'
            ? part.approval.approved
              ? 'Approved'
              : 'Keep planning sent'
            : null
  return (
    <article className="plan-card" data-testid="plan-card" data-state={closedElsewhere ? 'closed' : part.state}>
      <header>
        <strong>{title}</strong>
        {outcome && <span className="plan-outcome" data-testid="plan-outcome">{outcome}</span>}
      </header>
      <div className="plan-body" data-testid="plan-body">
        {part.state === 'input-streaming' ? <p className="hint">Writing the plan…</p> : <PlanMarkdown text={plan} />}
      </div>
      {part.state === 'approval-requested' && !closedElsewhere && version?.diff && (
        <details className="card-diff" data-testid="card-diff">
          <summary>
            Changes from v{version.version - 1} <DiffCounts lines={version.diff} />
          </summary>
          <PlanDiff lines={version.diff} />
        </details>
      )}
      {part.state === 'approval-requested' && !closedElsewhere && (
        <div className="plan-actions">
          <button type="button" className="approve" data-testid="approve" onClick={() => answer(part.approval.id, true)}>
            Approve
          </button>
          <textarea
            aria-label="Feedback"
            data-testid="feedback"
            placeholder="What should change? (optional)"
            value={feedback}
            maxLength={4000}
            rows={2}
            onChange={(event) => setFeedback(event.target.value)}
          />
          <button type="button" data-testid="keep-planning" onClick={() => answer(part.approval.id, false, feedback.trim() || undefined)}>
            Keep planning
          </button>
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

/** A plan as markdown: headings, lists, code; HTML as text, unsafe links removed (react-markdown's default). */
function PlanMarkdown({ text }: { text: string }) {
  return <Markdown remarkPlugins={[htmlAsText]}>{text}</Markdown>
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
              v{v.version} · {v.title} <span className="hint">({v.outcome}{v.by === 'policy' ? ', by policy' : ''})</span>
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
