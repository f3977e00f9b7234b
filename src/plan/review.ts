import type { ReviewAnswer, ReviewComment, ReviewQuestion } from '../types.js'
import type { ReviewOutcome } from '../log/kinds.js'

/**
 * The plan review's domain: the question (R43), the reading of an answer (R44, R45), the
 * plan's shape checks (R42.4–5), and every message a review call can fail with. The statechart
 * decides *when*; this module says *what*.
 */

/** The label that consents (R43, R44). */
export const APPROVE_LABEL = 'Approve'
/** The label that keeps planning (R43). */
export const KEEP_PLANNING_LABEL = 'Keep planning'
/** The label that approves into a fresh context (R101), offered with `decisions: 'all'`. */
export const APPROVE_FRESH_LABEL = 'Approve in a fresh context'
/** The label that leaves plan mode without carrying the plan out (R101), offered with `decisions: 'all'`. */
export const LEAVE_LABEL = 'Leave plan mode'

/** Which decisions a review offers (R101): R43's two, or all four. */
export type ReviewDecisions = 'approve-or-keep' | 'all'
/** A plan larger than this (UTF-8 bytes) is refused (R42.5). */
const MAX_PLAN_BYTES = 256 * 1024

/** Why a review call fails, by R42's checks and R45–R48, R60. */
export const REVIEW_MESSAGES = {
  noAgent: 'exit_plan_mode requires a calling agent (no session to switch)',
  planNotString: 'exit_plan_mode requires a "plan" string argument',
  notInPlanMode: 'exit_plan_mode is only available in plan mode',
  noHeading: 'exit_plan_mode requires a non-empty markdown plan starting with a # heading',
  tooLarge: 'exit_plan_mode plan is too large (over 256 KiB)',
  alreadyOpen: 'a plan review is already open for this agent; wait for its answer',
  ownedAgent:
    "human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent's final result",
  noChannel:
    'no user-interaction channel is available to review the plan; ask the user to switch the session mode instead',
  keepPlanning: 'The user chose to keep planning; revise the plan and present it again.',
  keepPlanningWithFeedback: 'The user chose to keep planning; their feedback: ',
  dismissed:
    'The user dismissed the plan review to speak instead; stay in plan mode, stop here, and wait for their message.',
  left: 'The user left plan mode without carrying out the plan; stop here and wait for their message.',
  superseded: 'The user changed the plan mode directly; the review is closed.',
  reloaded: 'the plan-mode service was reloaded while the plan was under review; present the plan again',
  aborted: 'the plan review was aborted',
  unreadableFailure: 'the review channel failed with an error that cannot be read',
} as const

// A markdown ATX heading: 1–6 '#', then spaces or tabs, then text on the same line.
const LEADING_HEADING = /^#{1,6}[ \t]+\S/
const ANY_HEADING = /^[ \t]*#{1,6}[ \t]+(\S.*)$/m

/** R42.4: the trimmed plan does not start with a markdown heading. */
export function lacksLeadingHeading(plan: string): boolean {
  return !LEADING_HEADING.test(plan.trim())
}

/** R42.5: the plan is over 256 KiB in UTF-8 (counted without `Buffer`: the core runs anywhere). */
export function isTooLarge(plan: string): boolean {
  if (plan.length * 3 <= MAX_PLAN_BYTES) return false
  let bytes = 0
  for (let i = 0; i < plan.length; i++) {
    const code = plan.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && (plan.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4 // a surrogate pair: one 4-byte character
      i++
    } else bytes += 3 // the rest of the BMP, and a lone surrogate (encoded as U+FFFD)
    if (bytes > MAX_PLAN_BYTES) return true
  }
  return false
}

/** The text of the plan's first markdown heading of any level, trailing whitespace removed (R51). */
export function planTitle(plan: string): string | undefined {
  return ANY_HEADING.exec(plan)?.[1]?.trimEnd()
}

/**
 * The one question a review asks (R43, R101), also for hosts that render a durable review
 * themselves and need its options' labels and descriptions.
 */
export function reviewQuestion(plan: string, decisions: ReviewDecisions = 'approve-or-keep'): ReviewQuestion {
  const approve = { label: APPROVE_LABEL, description: 'Leave plan mode; the plan is carried out from the next step.' }
  const keep = { label: KEEP_PLANNING_LABEL, description: 'Stay in plan mode; feedback goes back to the model.' }
  return {
    id: 'plan-review',
    header: 'Plan review',
    question: 'Approve this plan and leave plan mode?',
    detail: plan,
    options:
      decisions === 'all'
        ? // R43's two first, where every host and script already finds them (R101).
          [
            approve,
            keep,
            { label: APPROVE_FRESH_LABEL, description: 'Leave plan mode; the plan is carried out from the next step, in a fresh context that holds the plan and the decisions made.' },
            { label: LEAVE_LABEL, description: 'Leave plan mode without carrying out the plan; the model stops and waits.' },
          ]
        : [approve, keep],
    intent: { kind: 'plan-review', approve: APPROVE_LABEL },
  }
}

/**
 * How an answered review ended: consent, or keep planning with optional feedback (R44, R45); `by:
 * 'policy'` when a headless review policy answered, not the user (R94, R95).
 */
export type AnswerVerdict =
  | { outcome: 'approved'; fresh?: true; by?: 'policy' }
  | { outcome: 'left'; by?: 'policy' }
  | { outcome: 'keep-planning'; feedback?: string; comments?: ReviewComment[]; by?: 'policy' }

/**
 * What closes a durable review: an answer (R80), a policy's dismissal (R95), or the user's own
 * (`dismissReview`, R136, which carries no `by`).
 */
export type ReviewVerdict = AnswerVerdict | { outcome: 'dismissed'; by?: 'policy' }

/** `dismissReview` with a `reviewId` that is not a string (R136). */
export const DISMISS_MALFORMED_MESSAGE = 'dismissReview needs a reviewId string; nothing was changed'

const isBlank = (text: string | undefined) => text === undefined || text.trim() === ''

/** An answer that cannot be read as plain data (R44, R46, R80): a getter, or an array too long to be anyone's answer. */
export class UnreadableAnswerError extends Error {}

/** The most items an array of an answer holds (R80): copying more would hold the agent up. */
const MAX_ANSWER_ITEMS = 10_000

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null

/**
 * `target`'s own data property `key`, read once (through `[[Get]]`, so that a Proxy's `get` trap
 * is the answer it gives, once); an inherited one is absent. A getter is not data: the answer
 * cannot be read. Its getter is called once all the same, so that one that throws fails the
 * review with its own error, as any unreadable answer does (R46).
 */
function dataField(target: object, key: string, path: string): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(target, key)
  if (descriptor === undefined) return undefined
  if (!('value' in descriptor)) {
    descriptor.get?.call(target)
    throw new UnreadableAnswerError(`the plan review answer is not plain data (${path} is a getter)`)
  }
  return Reflect.get(target, key)
}

/** A copy of an answer's array, element by element, each read once through `copy`. */
function copyArray(array: object, path: string, copy: (value: unknown, path: string) => unknown): unknown[] {
  const length = dataField(array, 'length', `${path}.length`)
  if (typeof length !== 'number' || !(length <= MAX_ANSWER_ITEMS)) {
    throw new UnreadableAnswerError(`the plan review answer is too large (${path} holds more than ${MAX_ANSWER_ITEMS} items)`)
  }
  const items: unknown[] = []
  for (let i = 0; i < length; i++) items.push(copy(dataField(array, String(i), `${path}[${i}]`), `${path}[${i}]`))
  return items
}

/** Each field an answer's item may carry, copied (R80, R100): anything else is not read. */
function copyItem(item: unknown, path: string): unknown {
  if (!isObject(item)) return item
  const copy: Record<string, unknown> = {}
  for (const key of ['id', 'selected', 'custom', 'comments'] as const) {
    const value = dataField(item, key, `${path}.${key}`)
    if (value === undefined) continue
    copy[key] = !Array.isArray(value)
      ? value
      : key === 'comments'
        ? copyArray(value, `${path}.comments`, (comment, at) =>
            isObject(comment) ? { quote: dataField(comment, 'quote', `${at}.quote`), text: dataField(comment, 'text', `${at}.text`) } : comment,
          )
        : copyArray(value, `${path}.${key}`, (label) => label)
  }
  return copy
}

/**
 * An answer as plain data (R44, R80): its own data properties `answers` (copied element by
 * element) and `by`, each item's `id`, `selected`, `custom` and `comments`, each read exactly
 * once. What it decides is read from this copy only, so a getter that changes its mind, a Proxy
 * or a `toJSON` cannot show the checks one answer and the decision another. Anything but an object
 * is returned as it is (no answer).
 * @throws UnreadableAnswerError `the plan review answer is not plain data (<path> is a getter)`, or
 *   `the plan review answer is too large (<path> holds more than 10000 items)`; and what a Proxy's
 *   trap throws.
 */
export function copyAnswer(answer: unknown): unknown {
  if (!isObject(answer)) return answer
  const answers = dataField(answer, 'answers', 'answers')
  const by = dataField(answer, 'by', 'by')
  return { answers: Array.isArray(answers) ? copyArray(answers, 'answers', copyItem) : answers, ...(by === undefined ? {} : { by }) }
}

/**
 * Reads an answer (R44, R45, R100) from its plain copy (`copyAnswer`): anything but a clean single
 * `Approve` keeps planning, and comments anchored to the plan are never consent. The feedback is
 * what the model is given: the custom text, then the comments (`commentsText`). The answer's
 * `by: 'policy'` is kept (R94); any other `by` is not read.
 * @throws ReviewCommentError when a comment is malformed or, given the plan, quotes what it does not hold.
 * @throws UnreadableAnswerError (and a Proxy's error) when the answer cannot be read as plain data.
 */
export function readReviewAnswer(answer: unknown, plan?: string, decisions: ReviewDecisions = 'approve-or-keep'): AnswerVerdict {
  const data = copyAnswer(answer) as Partial<Record<'answers' | 'by', unknown>> | undefined
  const by = data?.by === 'policy' ? ({ by: 'policy' } as const) : {}
  const items = (Array.isArray(data?.answers) ? (data.answers as unknown[]) : []).filter((item) => (item as { id?: unknown } | null)?.id === 'plan-review')
  if (items.length !== 1) return { outcome: 'keep-planning', ...by }
  const item = items[0] as Partial<Record<'selected' | 'custom' | 'comments', unknown>>
  // A custom that is not a string is not "absent or blank" (R44): no consent, and no feedback either.
  const said = item.custom !== undefined && (typeof item.custom !== 'string' || !isBlank(item.custom))
  const custom = typeof item.custom === 'string' ? item.custom : undefined
  const comments = readComments(item.comments, plan)
  const selected = Array.isArray(item.selected) ? item.selected : []
  // One option alone, nothing else said (R44, R101): the other decisions are read only when offered.
  const only = selected.length === 1 && !said && comments.length === 0 ? selected[0] : undefined
  if (only === APPROVE_LABEL) return { outcome: 'approved', ...by }
  if (decisions === 'all' && only === APPROVE_FRESH_LABEL) return { outcome: 'approved', fresh: true, ...by }
  if (decisions === 'all' && only === LEAVE_LABEL) return { outcome: 'left', ...by }
  const parts = [...(isBlank(custom) ? [] : [custom!]), ...(comments.length === 0 ? [] : [commentsText(comments)])]
  if (parts.length === 0) return { outcome: 'keep-planning', ...by }
  return { outcome: 'keep-planning', feedback: parts.join('\n\n'), ...(comments.length === 0 ? {} : { comments }), ...by }
}

/** A comment the review refuses (R100): malformed, or quoting what the plan does not hold. */
export class ReviewCommentError extends Error {}

/**
 * The comments of an answer, checked (R100): each `{ quote, text }` with a quote that is not blank
 * and, when `plan` is given, an exact excerpt of it, and a text that is not blank. Copies: the
 * host's objects may change afterwards.
 * @throws ReviewCommentError `plan review comment <n> needs a non-empty quote and text` or
 *   `plan review comment <n> quotes text that is not in the plan: <JSON of the quote>`
 */
export function readComments(value: unknown, plan?: string): ReviewComment[] {
  if (value === undefined) return []
  if (!Array.isArray(value)) throw new ReviewCommentError('plan review comments must be an array of { quote, text }')
  return value.map((comment: unknown, i) => {
    const { quote, text } = (comment ?? {}) as Partial<ReviewComment>
    if (typeof quote !== 'string' || typeof text !== 'string' || isBlank(quote) || isBlank(text)) {
      throw new ReviewCommentError(`plan review comment ${i + 1} needs a non-empty quote and text`)
    }
    if (plan !== undefined && !plan.includes(quote)) {
      throw new ReviewCommentError(`plan review comment ${i + 1} quotes text that is not in the plan: ${JSON.stringify(quote)}`)
    }
    return { quote, text }
  })
}

/**
 * The comments as the model reads them (R100): `Comments on the plan:`, then one numbered line
 * per comment, `<n>. On <JSON of the quote>: <text>`.
 */
export function commentsText(comments: readonly ReviewComment[]): string {
  return ['Comments on the plan:', ...comments.map((comment, i) => `${i + 1}. On ${JSON.stringify(comment.quote)}: ${comment.text}`)].join('\n')
}

/** Whether a channel's dismissal (R46) came from a headless review policy, not the user (R94). */
export function isPolicyDismissal(error: unknown): boolean {
  try {
    return (error as { by?: unknown } | null | undefined)?.by === 'policy'
  } catch {
    return false // an unreadable `by` is no claim: the user's dismissal (R46)
  }
}

/** `answerReview` names no open durable review (R80). */
export function answerNotOpenMessage(reviewId: string): string {
  return `no plan review ${reviewId} is open for this agent; nothing was changed`
}

/** `answerReview` names the durable review closed last (R80). */
export function answerClosedMessage(reviewId: string, outcome: string): string {
  return `plan review ${reviewId} is already closed (${outcome}); nothing was changed`
}

/** `answerReview` with an answer of the wrong shape (R80). */
export const MALFORMED_ANSWER_MESSAGE =
  "answerReview needs a reviewId string and an answer { answers: [{ id: string, selected: string[], custom?: string, comments?: [{ quote, text }] }] }; nothing was changed"

/**
 * Whether `answer` has the shape of a `ReviewAnswer` (R80); what it means is R44's and R45's to
 * say. Give it the answer's plain copy (`copyAnswer`), the data the decision is read from.
 */
export function isWellFormedAnswer(answer: unknown): answer is ReviewAnswer {
  const answers = (answer as ReviewAnswer | null | undefined)?.answers
  if (typeof answer !== 'object' || answer === null || !Array.isArray(answers)) return false
  return answers.every(
    (item) =>
      typeof item === 'object' &&
      item !== null &&
      typeof item.id === 'string' &&
      Array.isArray(item.selected) &&
      item.selected.every((label: unknown) => typeof label === 'string') &&
      (item.custom === undefined || typeof item.custom === 'string') &&
      (item.comments === undefined || Array.isArray(item.comments)),
  )
}

/** The text a durable approval tells the model at the next step boundary (R81). */
/**
 * The approved plan as a section of the system prompt (R99), for hosts that pin it while the plan
 * is carried out, so that a compaction dropping the conversation does not drop the plan.
 */
export function approvedPlanSection(plan: string): string {
  return `The plan the user approved; carry it out (it stays here even when earlier messages are dropped):\n\n${plan}`
}

export const APPROVED_NEWS_TEXT = 'The user approved your plan and plan mode is off; carry out the plan, starting now.'

/** What the model is told, at a step boundary, of a durable review's outcome (R81). */
export function newsText(news: { outcome: 'approved' | 'left' | 'keep-planning' | 'superseded'; feedback?: string }): string {
  if (news.outcome === 'approved') return APPROVED_NEWS_TEXT
  if (news.outcome === 'left') return REVIEW_MESSAGES.left
  if (news.outcome === 'superseded') return REVIEW_MESSAGES.superseded
  return keepPlanningMessage(news.feedback)
}

/** The message a keep-planning answer fails the call with (R45). */
export function keepPlanningMessage(feedback: string | undefined): string {
  return feedback === undefined ? REVIEW_MESSAGES.keepPlanning : REVIEW_MESSAGES.keepPlanningWithFeedback + feedback
}

/**
 * What an exit call fails with when its review closed with `outcome` (not an approval): R45's
 * keep planning (with the feedback), R46's dismissal, R48's supersede, R60's reload, an abort, a
 * failed channel. The chart's results and `settleClosedApprovals` (R87) read it here.
 */
export function closedReviewMessage(outcome: Exclude<ReviewOutcome, 'approved'>, feedback?: string): string {
  switch (outcome) {
    case 'keep-planning':
      return keepPlanningMessage(feedback)
    case 'superseded':
      return REVIEW_MESSAGES.superseded
    case 'dismissed':
      return REVIEW_MESSAGES.dismissed
    case 'left':
      return REVIEW_MESSAGES.left
    case 'aborted':
      return REVIEW_MESSAGES.aborted
    case 'failed':
      return REVIEW_MESSAGES.unreadableFailure
    case 'reloaded':
      return REVIEW_MESSAGES.reloaded
  }
}

/** True when a channel's rejection means the user dismissed the review (R46). */
export function isDismissal(error: unknown): boolean {
  return (error as { code?: unknown } | null | undefined)?.code === 'ASK_CANCELLED'
}

/** The message of any thrown value: an Error's own message, else its string form. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The message an aborted call fails with (R46): the reason's, when the reason is an Error. */
export function abortMessage(signal: AbortSignal): string {
  return signal.reason instanceof Error ? signal.reason.message : REVIEW_MESSAGES.aborted
}
