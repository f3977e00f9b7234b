/**
 * `plan-mode chat`'s offline model: a deterministic stand-in for a real model that reads each
 * request the way a model would (the system prompt, the user's latest request, the tool calls and
 * results since, the mode notices) and answers in kind, so the whole plan-mode arc can be tried
 * without a network or a key:
 *
 * - plan mode (the section is in the system prompt): it lists the working directory, reads a file,
 *   then presents a markdown plan for the request with `exit_plan_mode`; on keep-planning it revises
 *   the plan (with the user's feedback, when given, each of its lines a step: the comments on the
 *   plan too, R100) and presents it again; on a dismissal it stops;
 * - after an approval: it "carries out" the plan in two steps and reports (it changes nothing); the
 *   same in a fresh context, whose first message hands the plan off (R102);
 * - after Leave plan mode (R101): it stops and waits;
 * - the default mode: it answers the user's latest message in plain text, saying it would act
 *   directly; when the user switched back from plan mode while it planned that message, it says it
 *   stops planning. What plan mode tells it at a boundary (a notice, a review's outcome: R81) is
 *   never taken for the user's message (R119).
 */
import { PLAN_MODE_TEXTS, EXIT_PLAN_MODE } from 'xstate-plan-mode'
import { respondingModel, type ModelCallOptions, type ScriptedReply } from './scripted-model.js'
import { countLines } from './workspace-tools.js'

/** Options of {@link offlineChatModel}. */
export interface OfflineChatModelOptions {
  /** The plan-mode section: its presence in the system prompt means plan mode is in force. */
  section: string
  /** Pause between streamed chunks, in ms (default 8): enough for a terminal to show a stream. */
  chunkDelayMs?: number
  /** Think time before each reply, in ms (default 8). */
  replyDelayMs?: number
}

/** The offline model (an AI SDK language model) for `generateText` and `streamText`. */
export function offlineChatModel({ section, chunkDelayMs = 8, replyDelayMs = chunkDelayMs }: OfflineChatModelOptions) {
  return respondingModel((options) => offlineReply(readConversation(options.prompt), section), {
    chunkDelayMs,
    replyDelayMs,
    modelId: 'offline',
  })
}

type Prompt = ModelCallOptions['prompt']

/** What happened after the user's latest request, in order. */
type Happening =
  | { kind: 'call'; toolName: string; input: unknown }
  | { kind: 'result'; toolName: string; ok: boolean; text: string }
  | { kind: 'notice'; entering: boolean }
  | { kind: 'news'; text: string }

/** The request as the offline model reads it. */
export interface Conversation {
  system: string
  /** The text of the latest user message that is not a mode notice ('' when there is none). */
  request: string
  /** Tool calls, tool results and notices after that message. */
  since: Happening[]
}

/**
 * What plan mode tells the model at a step boundary of a review's outcome (R81): a user message
 * the user did not write, never the request.
 */
function isReviewNews(text: string): boolean {
  return (
    text === PLAN_MODE_TEXTS.notices.approved ||
    text === PLAN_MODE_TEXTS.review.messages.left ||
    text === PLAN_MODE_TEXTS.review.messages.superseded ||
    text === PLAN_MODE_TEXTS.review.messages.keepPlanning ||
    text.startsWith(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback)
  )
}

/** Reads a provider-level prompt into what the offline model answers to. */
export function readConversation(prompt: Prompt): Conversation {
  const system = prompt
    .filter((message) => message.role === 'system')
    .map((message) => message.content)
    .join('\n')
  let request = ''
  let since: Happening[] = []
  for (const message of prompt) {
    if (message.role === 'user') {
      const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
      if (text === PLAN_MODE_TEXTS.notices.entering || text === PLAN_MODE_TEXTS.notices.leaving) {
        since.push({ kind: 'notice', entering: text === PLAN_MODE_TEXTS.notices.entering })
      } else if (isReviewNews(text)) {
        since.push({ kind: 'news', text })
      } else {
        request = text.trim()
        since = []
      }
    } else if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'tool-call') since.push({ kind: 'call', toolName: part.toolName, input: part.input })
      }
    } else if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue
        const { output } = part
        const ok = output.type !== 'error-text' && output.type !== 'error-json' && output.type !== 'execution-denied'
        const text = 'value' in output ? (typeof output.value === 'string' ? output.value : JSON.stringify(output.value)) : ''
        since.push({ kind: 'result', toolName: part.toolName, ok, text })
      }
    }
  }
  return { system, request, since }
}

/** The offline model's reply to a conversation. */
export function offlineReply(conversation: Conversation, section: string): ScriptedReply {
  const planning = conversation.system.includes(section)
  return planning ? planningReply(conversation) : defaultReply(conversation)
}

function planningReply({ request, since }: Conversation): ScriptedReply {
  const results = since.filter((h): h is Extract<Happening, { kind: 'result' }> => h.kind === 'result')
  const reviews = results.filter((r) => r.toolName === EXIT_PLAN_MODE)
  const lastReview = reviews.at(-1)
  if (lastReview && !lastReview.ok) {
    if (lastReview.text === PLAN_MODE_TEXTS.review.messages.dismissed) {
      return { text: 'Understood: I stay in plan mode and wait for your message.' }
    }
    const known = [PLAN_MODE_TEXTS.review.messages.keepPlanning, PLAN_MODE_TEXTS.review.messages.reloaded, PLAN_MODE_TEXTS.review.messages.alreadyOpen]
    if (!lastReview.text.startsWith(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback) && !(known as string[]).includes(lastReview.text)) {
      return { text: `The plan review ended: ${lastReview.text}` }
    }
  }

  const listing = results.find((r) => r.toolName === 'list_files' && r.ok)
  const calledList = since.some((h) => h.kind === 'call' && h.toolName === 'list_files')
  if (!calledList) return { text: 'Let me look around before I plan.', toolCalls: [{ name: 'list_files', input: { path: '.' } }] }
  const file = listing ? pickFile(listing.text) : undefined
  const calledRead = since.some((h) => h.kind === 'call' && h.toolName === 'read_file')
  if (file && !calledRead) return { text: `Reading \`${file}\`.`, toolCalls: [{ name: 'read_file', input: { path: file } }] }

  const read = results.find((r) => r.toolName === 'read_file' && r.ok)
  const feedback = reviews.flatMap((r) =>
    r.text.startsWith(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback) ? [r.text.slice(PLAN_MODE_TEXTS.review.messages.keepPlanningWithFeedback.length)] : [],
  )
  const revision = reviews.filter((r) => !r.ok && r.text !== PLAN_MODE_TEXTS.review.messages.reloaded && r.text !== PLAN_MODE_TEXTS.review.messages.alreadyOpen).length + 1
  const plan = buildPlan({
    request,
    revision,
    feedback,
    ...(listing ? { entries: countLines(listing.text) } : {}),
    ...(file && read ? { file, lines: countLines(read.text) } : {}),
  })
  const text = revision === 1 ? 'Here is my plan.' : feedback.length > 0 ? 'I revised the plan with your feedback.' : 'I revised the plan.'
  return { text, toolCalls: [{ name: EXIT_PLAN_MODE, input: { plan } }] }
}

/** How a fresh context's first message starts, and where its plan begins (R102, `handoffText`). */
const HANDOFF_START = /^The user approved this plan \(v\d+\) to be carried out in a fresh context/
const HANDOFF_PLAN = '\n\nThe plan:\n\n'

function defaultReply({ request, since }: Conversation): ScriptedReply {
  // R101: the user left plan mode without carrying out the plan: stop and wait.
  const lastResult = [...since].reverse().find((h) => h.kind === 'result')
  if (lastResult?.kind === 'result' && lastResult.toolName === EXIT_PLAN_MODE && !lastResult.ok && lastResult.text === PLAN_MODE_TEXTS.review.messages.left) {
    return { text: 'Understood: plan mode is off and I carry nothing out. I stop here and wait for your message.' }
  }
  // R102: a fresh context starts with the plan handed off: carry it out as after an approval.
  if (HANDOFF_START.test(request) && request.includes(HANDOFF_PLAN)) {
    const plan = request.slice(request.indexOf(HANDOFF_PLAN) + HANDOFF_PLAN.length)
    const title = PLAN_MODE_TEXTS.review.title(plan) ?? 'the plan'
    if (!since.some((h) => h.kind === 'call')) {
      return { text: `Approved in a fresh context. Carrying out "${title}", starting where the plan starts.`, toolCalls: [{ name: 'list_files', input: { path: '.' } }] }
    }
    const steps = plan.split('\n').filter((line) => /^\d+\.\s/.test(line))
    return { text: [`Done with "${title}". As the offline model I change no files; this is what I carried out:`, '', ...steps].join('\n') }
  }
  const approvedAt = since.findIndex((h) => h.kind === 'result' && h.toolName === EXIT_PLAN_MODE && h.ok)
  if (approvedAt >= 0) {
    const call = since.slice(0, approvedAt).reverse().find((h) => h.kind === 'call' && h.toolName === EXIT_PLAN_MODE)
    const plan = call?.kind === 'call' ? String((call.input as { plan?: unknown } | null)?.plan ?? '') : ''
    const title = PLAN_MODE_TEXTS.review.title(plan) ?? 'the plan'
    const after = since.slice(approvedAt + 1)
    if (!after.some((h) => h.kind === 'call')) {
      const read = since.find((h) => h.kind === 'call' && h.toolName === 'read_file')
      const path = read?.kind === 'call' ? String((read.input as { path?: unknown } | null)?.path ?? '.') : undefined
      const step = path !== undefined
        ? { name: 'read_file', input: { path } }
        : { name: 'list_files', input: { path: '.' } }
      return { text: `Approved. Carrying out "${title}", starting where the plan starts.`, toolCalls: [step] }
    }
    const steps = plan.split('\n').filter((line) => /^\d+\.\s/.test(line))
    return {
      text: [
        `Done with "${title}". As the offline model I change no files; this is what I carried out:`,
        '',
        ...steps,
      ].join('\n'),
    }
  }
  // Plan mode was left while this request was being planned (a call came before the notice): stop
  // planning it. Left before the request was written, the request is answered as any other.
  const lastNotice = [...since].reverse().find((h) => h.kind === 'notice')
  const noticeAt = lastNotice === undefined ? -1 : since.lastIndexOf(lastNotice)
  if (lastNotice?.kind === 'notice' && !lastNotice.entering && since.slice(0, noticeAt).some((h) => h.kind === 'call')) {
    return {
      text: `You switched back to the default mode, so I stop planning and act directly on "${summary(request)}". As the offline model I change nothing, but a real model would make the change now, without a plan review.`,
    }
  }
  if (request === '') return { text: 'What would you like to do?' }
  return {
    text: `You asked: "${summary(request)}". In the default mode I act directly, without presenting a plan first. I am the offline model, so I only say so; type /plan to have me explore, plan and ask for your approval.`,
  }
}

/** A file worth reading first, from a `list_files` result: a README, a manifest, else any file. */
function pickFile(listing: string): string | undefined {
  const files = listing.split('\n').filter((name) => name !== '' && !name.endsWith('/') && !name.startsWith('(') && !name.startsWith('…'))
  const preferred = [/^readme(\.|$)/i, /^package\.json$/, /^(cargo\.toml|pyproject\.toml|go\.mod)$/i]
  for (const pattern of preferred) {
    const found = files.find((name) => pattern.test(name))
    if (found) return found
  }
  return files[0]
}

/** The request's first line, shortened for a quote. */
function summary(request: string, max = 60): string {
  const line = (request.split('\n')[0] ?? '').trim()
  if (line.length <= max) return line
  const cut = line.slice(0, max)
  return `${cut.slice(0, cut.lastIndexOf(' ') > 20 ? cut.lastIndexOf(' ') : max)}…`
}

/** `text` ending as a sentence: with a period unless it has its own end mark. */
function sentence(text: string): string {
  const trimmed = text.replace(/:+$/, '')
  return trimmed === '' || /[.!?…]$/.test(trimmed) ? trimmed : `${trimmed}.`
}

interface PlanInputs {
  request: string
  revision: number
  feedback: string[]
  entries?: number
  file?: string
  lines?: number
}

/** The markdown plan the offline model presents (R41: it starts with a `#` heading). */
export function buildPlan({ request, revision, feedback, entries, file, lines }: PlanInputs): string {
  const title = summary(request).replace(/[.:]+$/, '') || 'The request'
  const looked = [
    entries !== undefined ? `listed the working directory (${entries} ${entries === 1 ? 'entry' : 'entries'})` : undefined,
    file !== undefined ? `read \`${file}\` (${lines} ${lines === 1 ? 'line' : 'lines'})` : undefined,
  ].filter((part): part is string => part !== undefined)
  const addressed = feedback.flatMap(feedbackPoints)
  const steps = [
    file !== undefined ? `Start from \`${file}\` and find the code the request touches.` : 'Find the code the request touches.',
    `Make the change: ${sentence(summary(request, 200)) || 'the request.'}`,
    'Add or update the tests that cover it.',
    ...addressed,
    'Run the tests and review the diff.',
  ]
  return [
    `# Plan: ${title}${revision > 1 ? ` (revision ${revision})` : ''}`,
    '',
    ...(looked.length > 0 ? [`I ${looked.join(' and ')}.`, ''] : []),
    '## Steps',
    '',
    ...steps.map((step, i) => `${i + 1}. ${step}`),
    ...(addressed.length > 0 ? ['', '## Feedback addressed', '', ...addressed.map((text) => `- ${text}`)] : []),
  ].join('\n')
}

/**
 * The points of one feedback, each a step of the revision: its lines with text, a list number
 * dropped; a line ending in a colon that introduces the lines after it (`Comments on the plan:`,
 * R100) is no point of its own. One-line feedback is one point.
 */
function feedbackPoints(text: string): string[] {
  const lines = text.split('\n').map((line) => line.trim()).filter((line) => line !== '')
  if (lines.length <= 1) return lines
  return lines.flatMap((line, i) => (line.endsWith(':') && i < lines.length - 1 ? [] : [line.replace(/^\d+\.\s+/, '')]))
}
