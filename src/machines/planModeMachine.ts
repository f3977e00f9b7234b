import { and, assign, emit, fromPromise, not, or, raise, setup, stateIn } from 'xstate'
import type { PlanModeEmitted, PlanModeEvent } from './events.js'
import type { PlanReviewData } from '../log/events.js'
import type { ReviewAnswer, SessionEvent, SetOutcome } from '../types.js'
import {
  REVIEW_MESSAGES,
  errorMessage,
  isDismissal,
  keepPlanningMessage,
  readReviewAnswer,
  type ReviewSettlement,
} from '../review.js'

/**
 * The per-agent plan-mode statechart (SPEC R1–R64). It alone decides behaviour; the facade
 * (`createPlanMode`) routes calls to it as events and binds its ports:
 * - `appendPlanMode`, `recordReview`: log appends (invoked, so a failing port becomes an error
 *   event the chart handles instead of an exception that would stop the actor, R62);
 * - `askReview`: the review question, an invoked promise actor whose signal aborts when the
 *   review is left (R43);
 * - `warn`, `rememberPending`, `forgetPending`: logger and pending-store ports.
 *
 * Four parallel regions, because these things really are independent and run at once:
 * - **mode**: F, the last logged `plan/mode` (moved only by observed log events, R2, R3);
 * - **turn**: whether a turn is open, from `turn/start`/`turn/end` (R5);
 * - **review**: an open plan review and its settlement (R42–R49);
 * - **intent**: the user's selection: logged, pending until a step boundary, or being appended.
 *
 * Operations (`SELECT`, `STEP_BOUNDARY`, `REVIEW.OPEN`, `REVIEW.SETTLE`) reach the chart one at a
 * time: the facade sends the next only when no state tagged `appending` is active. Each one's
 * result leaves as an emitted event (`set.settled`, `boundary.settled`, ...).
 */

/** The chart's extended state: JSON data only, so a persisted snapshot is meaningful. */
export interface PlanModeContext {
  /** K: what the model was last told about the mode; null before anything was told (R30). */
  told: boolean | null
  /** The open review's plan and, once known, how it ends. */
  review: { plan: string; title: string; settlement: ReviewSettlement | null } | null
  /** A selection that closed a review and waits for the review's record to land (R48). */
  deferredSelection: boolean | null
}

/** The tag of every state in which a log append is in flight. */
export const APPENDING_TAG = 'appending'

function unboundPort(name: string): never {
  throw new Error(`plan-mode: the ${name} port is not bound`)
}

const selects = (active: boolean) => ({ type: 'selects', params: { active } }) as const
const narrate = (active: boolean) =>
  [{ type: 'narrate', params: { active } }, { type: 'assignTold', params: { active } }] as const
const settleBoundary = (active: boolean) => ({ type: 'settleBoundary', params: { active } }) as const
const wasTold = (active: boolean) => ({ type: 'wasTold', params: { active } }) as const

/**
 * How the mode region answers boundaries under F = `active` (R18). An aborted one tells nothing
 * (R15); one with no selection waiting is resolved at once; the intent region raises
 * `BOUNDARY.RESOLVED` once it has dealt with P. When the model was already told `active` there
 * is nothing to narrate and K stays: only the result is emitted. That keeps the quiet boundary,
 * which every step pays, to one microstep that leaves the snapshot as it was (R70).
 */
function boundaryAnswers(active: boolean) {
  return {
    STEP_BOUNDARY: [
      { guard: 'isAborted' as const, actions: settleBoundary(active) },
      { guard: and(['hasNoPendingSelection', wasTold(active)]), actions: settleBoundary(active) },
      { guard: 'hasNoPendingSelection' as const, actions: narrate(active) },
    ],
    'BOUNDARY.RESOLVED': [{ guard: wasTold(active), actions: settleBoundary(active) }, { actions: narrate(active) }],
  }
}
const settleSelection = (outcome: SetOutcome) => ({ type: 'settleSelection', params: { outcome } }) as const
const rememberPending = (active: boolean) => ({ type: 'rememberPending', params: { active } }) as const

export const planModeSetup = setup({
  types: {} as {
    context: PlanModeContext
    events: PlanModeEvent
    emitted: PlanModeEmitted
  },
  actors: {
    /** Appends `plan/mode {active}` and resolves with the logged event (R10, R16). */
    appendPlanMode: fromPromise<SessionEvent, { active: boolean }>(async () => unboundPort('appendPlanMode')),
    /** Appends `plan/review` (R49). */
    recordReview: fromPromise<SessionEvent, PlanReviewData>(async () => unboundPort('recordReview')),
    /** Asks the user to review the plan (R43); its signal aborts when `reviewing` is left. */
    askReview: fromPromise<ReviewAnswer, { plan: string }>(async () => unboundPort('askReview')),
  },
  guards: {
    /** The selection's target is `params.active`. */
    selects: ({ event }, params: { active: boolean }) => event.type === 'SELECT' && event.active === params.active,
    isLoggedActive: stateIn({ mode: 'active' }),
    isLoggedInactive: stateIn({ mode: 'inactive' }),
    hasOpenTurn: stateIn({ turn: 'open' }),
    isAborted: ({ event }) => event.type === 'STEP_BOUNDARY' && event.aborted,
    /** No selection waits: the boundary has nothing to flush (R14). */
    hasNoPendingSelection: stateIn({ intent: 'logged' }),
    /** K = `params.active`: the model was last told that state (R30). */
    wasTold: ({ context }, params: { active: boolean }) => context.told === params.active,
    isEnteringPending: stateIn({ intent: { pending: 'entering' } }),
    isLeavingPending: stateIn({ intent: { pending: 'leaving' } }),
    /** x = F (no selection is pending, so F is also E). */
    selectsLoggedMode: or([
      and([selects(true), 'isLoggedActive']),
      and([selects(false), 'isLoggedInactive']),
    ]),
    /** x = E, the effective state (R8). */
    selectsEffectiveMode: or([
      and(['isEnteringPending', selects(true)]),
      and(['isLeavingPending', selects(false)]),
      and([not('isEnteringPending'), not('isLeavingPending'), 'selectsLoggedMode']),
    ]),
    /** E is inactive (R42.3). */
    isEffectivelyInactive: or([
      'isLeavingPending',
      and(['isLoggedInactive', not('isEnteringPending')]),
    ]),
    /** A review is open and still waits on the user or its turn: a user switch closes it (R48). */
    canSupersedeReview: stateIn({ review: { open: 'unsettled' } }),
    hasOpenReview: stateIn({ review: 'open' }),
    hasPlanProblem: ({ event }, params: { problem: 'no-heading' | 'too-large' }) =>
      event.type === 'REVIEW.OPEN' && event.problem === params.problem,
    isOwnedByAnotherAgent: ({ event }) => event.type === 'REVIEW.OPEN' && event.owned,
    lacksReviewChannel: ({ event }) => event.type === 'REVIEW.OPEN' && !event.hasChannel,
    logsActive: ({ event }) => event.type === 'LOG.PLAN_MODE' && event.active,
    logsInactive: ({ event }) => event.type === 'LOG.PLAN_MODE' && !event.active,
    isApprovalSettled: ({ context }) => context.review?.settlement?.outcome === 'approved',
    hasDeferredSelection: ({ context }) => context.deferredSelection !== null,
  },
  actions: {
    /** Hands `set` its result (R8–R10). */
    settleSelection: emit((_, params: { outcome: SetOutcome }) => ({ type: 'set.settled', outcome: params.outcome }) as const),
    /** Hands `set` the log's error (R11). */
    failSelection: emit(({ event }) => ({ type: 'set.failed', error: (event as { error?: unknown }).error }) as const),
    /**
     * Hands the boundary its result under the state in force, telling the model of a switch only
     * when it was told otherwise before (R30, R32, R35, R36). `assignTold` follows it (K := state).
     */
    narrate: emit(({ context }, params: { active: boolean }) => ({
      type: 'boundary.settled' as const,
      active: params.active,
      notice: context.told !== null && context.told !== params.active ? (params.active ? 'entering' as const : 'leaving' as const) : null,
    })),
    /** Hands the boundary its result without telling anything, K unchanged (R15, R19). */
    settleBoundary: emit((_, params: { active: boolean }) => ({
      type: 'boundary.settled',
      active: params.active,
      notice: null,
    }) as const),
    /** A request header tells the model the logged state (R30). */
    assignTold: assign((_, params: { active: boolean }) => ({ told: params.active })),
    rejectReview: emit((_, params: { message: string }) => ({ type: 'review.rejected', message: params.message }) as const),
    assignReview: assign(({ event }) =>
      event.type === 'REVIEW.OPEN'
        ? { review: { plan: event.plan, title: event.title, settlement: null }, deferredSelection: null }
        : {},
    ),
    announceReview: emit({ type: 'review.opened' } as const),
    /** Reads the user's answer (R44, R45). */
    assignAnswer: assign(({ context, event }) => {
      const verdict = readReviewAnswer((event as { output?: ReviewAnswer }).output)
      const settlement: ReviewSettlement =
        verdict.outcome === 'approved'
          ? { outcome: 'approved' }
          : verdict.feedback === undefined
            ? { outcome: 'keep-planning', error: keepPlanningMessage(undefined) }
            : { outcome: 'keep-planning', error: keepPlanningMessage(verdict.feedback), feedback: verdict.feedback }
      return { review: context.review && { ...context.review, settlement } }
    }),
    /** Reads the channel's failure: a dismissal, or any other error with its own message (R46). */
    assignAskFailure: assign(({ context, event }) => {
      const error = (event as { error?: unknown }).error
      const settlement: ReviewSettlement = isDismissal(error)
        ? { outcome: 'dismissed', error: REVIEW_MESSAGES.dismissed }
        : { outcome: 'failed', error: errorMessage(error) }
      return { review: context.review && { ...context.review, settlement } }
    }),
    /** The review ends without an answer: aborted, superseded or reloaded (R46, R48, R60). */
    closeReview: assign(({ context, event }) => {
      const settlement: ReviewSettlement =
        event.type === 'REVIEW.ABORT'
          ? { outcome: 'aborted', error: event.message }
          : event.type === 'SELECT'
            ? { outcome: 'superseded', error: REVIEW_MESSAGES.superseded }
            : { outcome: 'reloaded', error: REVIEW_MESSAGES.reloaded }
      return {
        review: context.review && { ...context.review, settlement },
        deferredSelection: event.type === 'SELECT' ? event.active : null,
      }
    }),
    requestSettlement: emit({ type: 'review.answered' } as const),
    /** Settles the review call with its outcome (R47–R49). */
    settleReview: emit(({ context }) => ({
      type: 'review.settled' as const,
      settlement: context.review?.settlement ?? { outcome: 'failed' as const, error: 'the plan review ended without an outcome' },
    })),
    clearReview: assign({ review: null }),
    /** P is resolved for this step: the mode region answers under F, the state in force (R18). */
    resolveBoundary: raise({ type: 'BOUNDARY.RESOLVED' } as const),
    /** The flush failed: the mode region answers under F without narrating (R18, R19). */
    reportUnflushedBoundary: raise({ type: 'BOUNDARY.FLUSH_FAILED' } as const),
    /** Consent raises this so the intent follows (R47). */
    raiseApproval: raise({ type: 'REVIEW.APPROVED' } as const),
    /** The selection that closed the review now follows R8–R10 (R48). */
    replayDeferredSelection: raise(({ context }) => ({ type: 'SELECT' as const, active: context.deferredSelection === true })),
    clearDeferredSelection: assign({ deferredSelection: null }),
    /** Logger port: a contained fault (R19, R49). Bound by the facade; never throws. */
    warn: (_, _params: { message: string }) => {},
    /** Pending-store port: the selection now waiting for a boundary. Bound by the facade. */
    rememberPending: (_, _params: { active: boolean }) => {},
    /** Pending-store port: no selection waits any more. Bound by the facade. */
    forgetPending: () => {},
  },
})

/** A pending selection of `active`, waiting for the next step boundary (R9, R12, R16, R19). */
function pendingSelection(active: boolean) {
  // The target equals F when someone else logged it meanwhile: the boundary drops it (R16).
  const targetIsLogged = active ? ('isLoggedActive' as const) : ('isLoggedInactive' as const)
  const other = active ? ('leaving' as const) : ('entering' as const)
  return {
    initial: 'queued' as const,
    entry: rememberPending(active),
    states: {
      /**
       * Waits for a boundary. A selection of the same target is a noop; a selection of F cancels.
       * When someone else logged P's target meanwhile, the other selection is a real switch.
       */
      queued: {
        on: {
          SELECT: [
            { guard: selects(active), actions: settleSelection('noop') },
            // The review closes first and replays this selection afterwards (R48).
            { guard: 'canSupersedeReview' as const },
            { guard: 'selectsLoggedMode' as const, target: '#planMode.intent.logged', actions: settleSelection('cancelled') },
            { guard: 'hasOpenTurn' as const, target: `#planMode.intent.pending.${other}`, actions: settleSelection('queued') },
            { target: 'committing' },
          ],
          STEP_BOUNDARY: [
            // R15: an aborted boundary keeps P; the mode region answers it.
            { guard: 'isAborted' as const },
            { guard: targetIsLogged, target: '#planMode.intent.logged', actions: 'resolveBoundary' as const },
            { target: 'flushing' },
          ],
          // Consent: with F active a leave waits for the boundary, else nothing waits (R47).
          // (A pending leave makes E inactive, so no review can be open with one: R42.3, R48.)
          ...(active
            ? {
                'REVIEW.APPROVED': [
                  { guard: 'isLoggedActive' as const, target: '#planMode.intent.pending.leaving' },
                  { target: '#planMode.intent.logged' },
                ],
              }
            : {}),
        },
      },
      /**
       * Idle, the other selection is appended now (R10); P stays until that append succeeded
       * and is kept when it fails (R11).
       */
      committing: {
        tags: [APPENDING_TAG],
        invoke: {
          src: 'appendPlanMode' as const,
          input: { active: !active },
          onDone: { target: '#planMode.intent.logged', actions: settleSelection('committed') },
          onError: { target: 'queued', actions: 'failSelection' as const },
        },
      },
      /** The boundary appends the selection; P is dropped only once it is logged (R16, R17). */
      flushing: {
        tags: [APPENDING_TAG],
        invoke: {
          src: 'appendPlanMode' as const,
          input: { active },
          onDone: { target: '#planMode.intent.logged', actions: 'resolveBoundary' as const },
          // R19: contained; P stays for the next boundary and the step runs as logged (R18).
          onError: {
            target: 'queued',
            actions: [
              { type: 'warn' as const, params: { message: 'plan-mode: step-boundary flush failed' } },
              'reportUnflushedBoundary' as const,
            ],
          },
        },
      },
    },
  }
}

/** An idle selection of `active` being appended now (R10, R11). */
function committingSelection(active: boolean) {
  return {
    tags: [APPENDING_TAG],
    invoke: {
      src: 'appendPlanMode' as const,
      input: { active },
      onDone: { target: '#planMode.intent.logged', actions: settleSelection('committed') },
      onError: { target: '#planMode.intent.logged', actions: 'failSelection' as const },
    },
  }
}

/** The plan-mode statechart of one agent. Bind its ports with `.provide(...)`. */
export const planModeMachine = planModeSetup.createMachine({
  id: 'planMode',
  type: 'parallel',
  context: { told: null, review: null, deferredSelection: null },
  states: {
    /**
     * F, the logged mode (R2). Only observed `plan/mode` events move it (R3): the service never
     * sets it directly, so the chart always agrees with the log. It also answers step boundaries,
     * because the state in force for a step is F once the intent is resolved (R18): at once when
     * no selection waits, else when the intent region raises `BOUNDARY.RESOLVED`.
     */
    mode: {
      initial: 'inactive',
      states: {
        inactive: {
          on: {
            'LOG.PLAN_MODE': { guard: 'logsActive', target: 'active' },
            // A header tells the model F (R30); K already F changes nothing.
            'LOG.REQUEST_HEADER': { guard: not(wasTold(false)), actions: { type: 'assignTold', params: { active: false } } },
            ...boundaryAnswers(false),
            'BOUNDARY.FLUSH_FAILED': { actions: settleBoundary(false) },
          },
        },
        active: {
          on: {
            'LOG.PLAN_MODE': { guard: 'logsInactive', target: 'inactive' },
            // A header tells the model F (R30); K already F changes nothing.
            'LOG.REQUEST_HEADER': { guard: not(wasTold(true)), actions: { type: 'assignTold', params: { active: true } } },
            ...boundaryAnswers(true),
            'BOUNDARY.FLUSH_FAILED': { actions: settleBoundary(true) },
          },
        },
      },
    },

    /** Whether a turn is open, from the log alone (R5). Decides queue vs commit (R9, R10). */
    turn: {
      initial: 'idle',
      states: {
        idle: { on: { 'LOG.TURN_START': 'open' } },
        open: { on: { 'LOG.TURN_END': 'idle' } },
      },
    },

    /**
     * The plan review (R42–R49). Declared before `intent` so that, for one event, its record is
     * appended before any `plan/mode` (R48: the call fails before the selection follows).
     */
    review: {
      initial: 'idle',
      on: {
        // R42's checks 3–8, in order (1–2 need no state and are checked by the tool).
        'REVIEW.OPEN': [
          { guard: 'isEffectivelyInactive', actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.notInPlanMode } } },
          { guard: { type: 'hasPlanProblem', params: { problem: 'no-heading' } }, actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.noHeading } } },
          { guard: { type: 'hasPlanProblem', params: { problem: 'too-large' } }, actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.tooLarge } } },
          { guard: 'hasOpenReview', actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.alreadyOpen } } },
          { guard: 'isOwnedByAnotherAgent', actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.ownedAgent } } },
          { guard: 'lacksReviewChannel', actions: { type: 'rejectReview', params: { message: REVIEW_MESSAGES.noChannel } } },
          { target: '.open', actions: ['assignReview', 'announceReview'] },
        ],
      },
      states: {
        /** No review is open. */
        idle: {},
        /** A review call is in progress: the exit tool's call settles when this is left. */
        open: {
          initial: 'unsettled',
          states: {
            /**
             * The outcome is not decided yet. A user switch (R48), the call's abort (R46) or a
             * reload (R60, R63) closes the review here; an answer that comes later is ignored.
             */
            unsettled: {
              initial: 'reviewing',
              on: {
                SELECT: { guard: not('selectsEffectiveMode'), target: 'recording', actions: 'closeReview' },
                'REVIEW.ABORT': { target: 'recording', actions: 'closeReview' },
                RELOAD: { target: 'recording', actions: 'closeReview' },
              },
              states: {
                /** The user is being asked. Leaving this state aborts the question's signal. */
                reviewing: {
                  invoke: {
                    src: 'askReview',
                    input: ({ context }) => ({ plan: context.review?.plan ?? '' }),
                    onDone: { target: 'answered', actions: 'assignAnswer' },
                    onError: { target: 'answered', actions: 'assignAskFailure' },
                  },
                },
                /** Answered; waits for its turn among the agent's operations (SPEC §1). */
                answered: {
                  entry: 'requestSettlement',
                  on: { 'REVIEW.SETTLE': '#planMode.review.open.recording' },
                },
              },
            },
            /** The outcome is decided and being recorded as `plan/review` (R49); then the call settles. */
            recording: {
              tags: [APPENDING_TAG],
              invoke: {
                src: 'recordReview',
                input: ({ context }) => {
                  const { plan = '', title = '', settlement } = context.review ?? {}
                  return {
                    outcome: settlement?.outcome ?? 'failed',
                    title,
                    plan,
                    ...(settlement?.feedback !== undefined ? { feedback: settlement.feedback } : {}),
                  }
                },
                onDone: '#planMode.review.settling',
                onError: {
                  target: '#planMode.review.settling',
                  actions: { type: 'warn', params: { message: 'plan-mode: review record failed' } },
                },
              },
            },
          },
        },
        /** Transient: consent applies, the call settles, a deferred selection follows (R47, R48). */
        settling: {
          always: [
            // Consent: K := inactive (the tool result tells the model), the intent follows (R47).
            {
              guard: 'isApprovalSettled',
              target: 'idle',
              actions: [{ type: 'assignTold', params: { active: false } }, 'raiseApproval', 'settleReview', 'clearReview'],
            },
            {
              guard: 'hasDeferredSelection',
              target: 'idle',
              actions: ['settleReview', 'clearReview', 'replayDeferredSelection', 'clearDeferredSelection'],
            },
            { target: 'idle', actions: ['settleReview', 'clearReview'] },
          ],
        },
      },
    },

    /**
     * The user's selection. `logged`: none waits, E = F. `pending.*`: P waits for the next step
     * boundary (an open turn, R9, R12). `committing.*`: an idle selection is being appended (R10).
     * Selections and boundaries arrive only when nothing is `appending`, so the appending states
     * accept none.
     */
    intent: {
      initial: 'logged',
      states: {
        logged: {
          on: {
            SELECT: [
              { guard: 'selectsLoggedMode', actions: settleSelection('noop') },
              // The review closes first and replays this selection afterwards (R48).
              { guard: 'canSupersedeReview' },
              { guard: and(['hasOpenTurn', selects(true)]), target: 'pending.entering', actions: settleSelection('queued') },
              { guard: 'hasOpenTurn', target: 'pending.leaving', actions: settleSelection('queued') },
              { guard: selects(true), target: 'committing.entering' },
              { target: 'committing.leaving' },
            ],
            // STEP_BOUNDARY: nothing to resolve; the mode region answers it.
            // Consent while F is active leaves silently at the next boundary (R47).
            'REVIEW.APPROVED': { guard: 'isLoggedActive', target: 'pending.leaving' },
          },
        },
        // Always entered through an explicit child; XState wants an initial one anyway.
        committing: {
          initial: 'entering',
          states: {
            entering: committingSelection(true),
            leaving: committingSelection(false),
          },
        },
        pending: {
          initial: 'entering',
          exit: 'forgetPending',
          states: {
            entering: pendingSelection(true),
            leaving: pendingSelection(false),
          },
        },
      },
    },
  },
})
