import { and, assign, fromCallback, fromPromise, setup, type ActorRef, type Snapshot } from 'xstate'
import type { PlanModeEmitted, PlanModeEvent } from './planMode.events.js'
import { answerClosedMessage } from '../plan/review.js'
import type { ReviewOutcome } from '../log/kinds.js'

/**
 * The calls that outlive their turn, each a child actor with final states that settles its caller
 * (as sanity-io/comlink's requests do): an exit call (`exit_plan_mode`, R42–R49, R79) and an
 * answer to a durable review (`answerReview`, `answerReviewByPolicy`, R80, R95).
 *
 * exit call:  queued → open (channel) → storing → approved | failed, aborted
 *             queued → requesting (durable) → submitted | failed
 * answer:     queued → recording → storing → answered | failed
 *
 * A call waits in `queued` for the agent's turn (the service's queue, §1); the chart tells it what
 * became of its operation and, later, of its review, by emitting (`PlanModeEmitted`): the call
 * listens to the agent's actor while its review is open, and knows its review by the number the
 * chart told it. The caller's promise is settled by the entry of a final state, once.
 */

/** The agent's side of a call: its actor's reports, the abort of a review, the pending store. */
export interface CallAgent {
  /** Hears what the agent's chart emits, and its stop, until the returned function is called. */
  listen(told: (emitted: PlanModeEmitted) => void, stopped: () => void): () => void
  /** Sends the agent's chart an event that is no operation (an abort), unless it stopped. */
  send(event: PlanModeEvent): void
  /** Resolves once the pending-store writes started so far have landed (R47, R64). */
  storeWritten(): Promise<void>
}

/** Told to the call the moment its operation was answered, in its turn. */
type Turned = { type: 'TURNED'; review: number; agent: CallAgent }

/** What a call hears. */
type CallEvent =
  | Turned
  /** Its operation was not done: refused, or reloaded away before its turn came (R42, R60, R63, R80). */
  | { type: 'REFUSED'; error: unknown }
  | { type: 'ABORT'; message: string }
  | Extract<PlanModeEmitted, { type: 'review.closed' | 'review.landed' }>
  | { type: 'STOPPED' }

/**
 * Runs the call's operation in the agent's turn: `turned` runs the moment the chart answers it
 * (a refusal throws instead); rejects with the reason the operation was not done.
 */
export type TakeTurn = (turned: (review: number, agent: CallAgent) => void) => Promise<unknown>

/** The caller's promise, settled by the call's final state. */
interface Settle<T> {
  resolve(value: T): void
  reject(error: unknown): void
}

/**
 * What a call fails with once the service is disposed (R60): also thrown to an exit call or an
 * answer whose agent's actor stopped before it settled. One text, here, where the calls live.
 */
export const DISPOSED_MESSAGE = 'plan-mode service is disposed'

/** Listens, for the call, to the agent's actor while its review is open. */
const listen = fromCallback<CallEvent, CallAgent>(({ input, sendBack }) =>
  input.listen(
    (told) => {
      if (told.type === 'review.closed' || told.type === 'review.landed') sendBack(told)
    },
    () => sendBack({ type: 'STOPPED' }),
  ),
)

/** Turns the call's signal into `ABORT` events while the call runs (R46). */
const watchAbort = fromCallback<CallEvent, { signal?: AbortSignal; message: (signal: AbortSignal) => string }>(({ input, sendBack }) => {
  const { signal } = input
  if (signal === undefined) return
  const onAbort = () => sendBack({ type: 'ABORT', message: input.message(signal) })
  signal.addEventListener('abort', onAbort, { once: true })
  return () => signal.removeEventListener('abort', onAbort)
})

/**
 * Starts a call and puts it in the agent's queue: it hears `TURNED` the moment its operation was
 * answered (it is listening for its review before the chart moves on), `REFUSED` when it was not
 * done. The turn runs once the call has started, so that the call takes `TURNED` at once.
 */
export function startCall(call: ActorRef<Snapshot<unknown>, CallEvent>, take: TakeTurn): void {
  call.start()
  take((review, agent) => call.send({ type: 'TURNED', review, agent })).catch((error: unknown) => {
    if (call.getSnapshot().status === 'active') call.send({ type: 'REFUSED', error })
  })
}

/** The pending store has what the review's outcome implies (R47, R64, R80). */
const storeWritten = fromPromise<void, CallAgent>(({ input }) => input.storeWritten())

/** What an exit call resolves with (R47, R79). */
export type ExitCallResult = { approved: true } | { submitted: true; reviewId: string }

export interface ExitCallInput {
  settle: Settle<ExitCallResult>
  signal?: AbortSignal
  /** How an abort of `signal` reads (R46). */
  abortMessage: (signal: AbortSignal) => string
  /** The durable review's id: the log holds the request, the call is submitted once it did (R79). */
  reviewId?: string
}

interface ExitCallContext extends ExitCallInput {
  review: number
  agent: CallAgent | null
  error: unknown
}

/**
 * One `exit_plan_mode` call. Aborted before its turn came it fails at once and asks nothing
 * (R46); once its channel review is open, an abort closes the review in the chart, whose closing
 * fails the call. A durable review's request, once its turn came, is the log's: an abort no longer
 * touches it (R79).
 */
export const exitCallMachine = setup({
  types: {} as { context: ExitCallContext; input: ExitCallInput; events: CallEvent },
  actors: { listen, watchAbort, storeWritten },
  guards: {
    isDurable: ({ context }) => context.reviewId !== undefined,
    /** The chart reports on the review this call opened. */
    isOwnReview: ({ context, event }) => 'review' in event && event.review === context.review,
    isApproval: ({ event }) => event.type === 'review.closed' && event.result.outcome === 'approved',
  },
  actions: {
    noteReview: assign(({ event }) => (event.type === 'TURNED' ? { review: event.review, agent: event.agent } : {})),
    noteFailure: assign(({ event }) => ({ error: event.type === 'review.closed' ? new Error(event.result.error) : new Error(DISPOSED_MESSAGE) })),
    noteTurnFailure: assign(({ event }) => (event.type === 'REFUSED' ? { error: event.error } : {})),
    /** R46: the call fails at once, before its turn came. */
    failAborted: ({ context, event }) => context.settle.reject(new Error(event.type === 'ABORT' ? event.message : '')),
    /** R46: the review the call opened meanwhile closes as aborted (its call already failed). */
    abortReview: ({ context, event }) => {
      if (event.type === 'TURNED' && context.signal?.aborted) {
        event.agent.send({ type: 'REVIEW.ABORT', review: event.review, message: context.abortMessage(context.signal) })
      }
    },
    /** R46: the channel review closes in the chart as aborted; its closing fails the call. */
    sendAbort: ({ context, event }) => {
      if (event.type === 'ABORT') context.agent?.send({ type: 'REVIEW.ABORT', review: context.review, message: event.message })
    },
    resolveApproved: ({ context }) => context.settle.resolve({ approved: true }),
    resolveSubmitted: ({ context }) => context.settle.resolve({ submitted: true, reviewId: context.reviewId! }),
    reject: ({ context }) => context.settle.reject(context.error),
  },
}).createMachine({
  id: 'exitCall',
  context: ({ input }) => ({ ...input, review: 0, agent: null, error: undefined }),
  invoke: { src: 'watchAbort', input: ({ context }) => ({ signal: context.signal, message: context.abortMessage }) },
  initial: 'queued',
  states: {
    /** Waits for the agent's turn; the chart then opens the review, or refuses it (R42). */
    queued: {
      initial: 'waiting',
      states: {
        waiting: {
          on: {
            ABORT: { target: 'aborting', actions: 'failAborted' },
            REFUSED: { target: '#exitCall.failed', actions: 'noteTurnFailure' },
          },
        },
        /** Failed by its abort; its turn may still open the review, which then closes at once. */
        aborting: { on: { TURNED: { target: '#exitCall.aborted', actions: 'abortReview' }, REFUSED: '#exitCall.aborted' } },
      },
      on: {
        TURNED: [
          { guard: 'isDurable', target: 'requesting', actions: 'noteReview' },
          { target: 'open', actions: 'noteReview' },
        ],
      },
    },
    /** The channel review is open: the user answers, a switch supersedes it, a reload ends it (R43–R48, R60). */
    open: {
      entry: 'abortReview',
      invoke: { src: 'listen', input: ({ context }) => context.agent! },
      on: {
        ABORT: { actions: 'sendAbort' },
        'review.closed': [
          { guard: and(['isOwnReview', 'isApproval']), target: 'storing' },
          { guard: 'isOwnReview', target: 'failed', actions: 'noteFailure' },
        ],
        STOPPED: { target: 'failed', actions: 'noteFailure' },
      },
    },
    /** The durable review's request is being appended (R79); an abort no longer touches it. */
    requesting: {
      invoke: { src: 'listen', input: ({ context }) => context.agent! },
      on: {
        'review.landed': { guard: 'isOwnReview', target: 'submitted' },
        'review.closed': { guard: 'isOwnReview', target: 'failed', actions: 'noteFailure' },
        STOPPED: { target: 'failed', actions: 'noteFailure' },
      },
    },
    /** Approved: the call resolves once the pending store has the leave it implies (R47, R64). */
    storing: { invoke: { src: 'storeWritten', input: ({ context }) => context.agent!, onDone: 'approved' } },
    approved: { type: 'final', entry: 'resolveApproved' },
    submitted: { type: 'final', entry: 'resolveSubmitted' },
    failed: { type: 'final', entry: 'reject' },
    /** Failed at once by its abort (R46). */
    aborted: { type: 'final' },
  },
})

export interface AnswerCallInput {
  settle: Settle<ReviewOutcome>
  reviewId: string
}

interface AnswerCallContext extends AnswerCallInput {
  review: number
  agent: CallAgent | null
  outcome: ReviewOutcome | null
  error: unknown
}

/**
 * One answer to a durable review (R80, R95): refused in its turn when the review is not open;
 * resolves with the recorded outcome once the record landed (and the pending store has what it
 * implies), rejects when it could not be recorded (the review stays open) or another answer was
 * recorded first.
 */
export const answerCallMachine = setup({
  types: {} as { context: AnswerCallContext; input: AnswerCallInput; events: CallEvent },
  actors: { listen, storeWritten },
  guards: {
    isOwnReview: ({ context, event }) => 'review' in event && event.review === context.review,
  },
  actions: {
    noteReview: assign(({ event }) => (event.type === 'TURNED' ? { review: event.review, agent: event.agent } : {})),
    noteTurnFailure: assign(({ event }) => (event.type === 'REFUSED' ? { error: event.error } : {})),
    /** R80: recorded; or not recorded (the log's error), or recorded after another answer (lost). */
    noteRecord: assign(({ context, event }) => {
      if (event.type !== 'review.closed') return { error: new Error(DISPOSED_MESSAGE) }
      if (event.failed !== undefined) return { error: event.failed }
      if (event.lost === true) return { error: new Error(answerClosedMessage(context.reviewId, event.result.outcome)) }
      return { outcome: event.result.outcome }
    }),
    resolve: ({ context }) => context.settle.resolve(context.outcome!),
    reject: ({ context }) => context.settle.reject(context.error),
  },
}).createMachine({
  id: 'answerCall',
  context: ({ input }) => ({ ...input, review: 0, agent: null, outcome: null, error: undefined }),
  initial: 'queued',
  states: {
    /** Waits for the agent's turn; the chart then records the answer, or refuses it (R80). */
    queued: {
      on: {
        TURNED: { target: 'recording', actions: 'noteReview' },
        REFUSED: { target: 'failed', actions: 'noteTurnFailure' },
      },
    },
    /** The answer's record is being appended (R80). */
    recording: {
      invoke: { src: 'listen', input: ({ context }) => context.agent! },
      on: {
        'review.closed': { guard: 'isOwnReview', target: 'recorded', actions: 'noteRecord' },
        STOPPED: { target: 'failed', actions: 'noteRecord' },
      },
    },
    recorded: { always: [{ guard: ({ context }) => context.outcome === null, target: 'failed' }, { target: 'storing' }] },
    /** Recorded: resolves once the pending store has what the outcome implies (R47, R64, R80). */
    storing: { invoke: { src: 'storeWritten', input: ({ context }) => context.agent!, onDone: 'answered' } },
    answered: { type: 'final', entry: 'resolve' },
    failed: { type: 'final', entry: 'reject' },
  },
})

