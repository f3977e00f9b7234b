import { and, not, or, stateIn } from 'xstate'
import type { SetOutcome } from '../types.js'
import { REVIEW_MESSAGES } from '../plan/review.js'
import { APPENDING_TAG, initialContext, planModeSetup, selects } from './planMode.setup.js'
import { UNATTACHED_PORTS, type PlanModePorts } from './planMode.effects.js'
import type { PlanLogRestore } from '../log/kinds.js'

/**
 * The per-agent plan-mode statechart (docs/spec.md R1–R72). It decides every behaviour and
 * emits every result; the service only sends it events, waits for what it emits, and reads its
 * snapshot.
 *
 * Five regions run at once, because these things really are independent:
 * - **mode**: F, the last logged `plan/mode`, moved only by observed log events (R2, R3); it
 *   answers step boundaries, since F is the state in force once the intent is resolved (R18);
 * - **turn**: whether a turn is open, from `turn/start`/`turn/end` (R5);
 * - **review**: an open plan review, from the exit call to its `plan/review` record (R42–R49);
 * - **intent**: the user's selection: logged, pending until a step boundary, or being appended;
 * - **lifecycle**: serving, or closing until the work in flight has landed (or for at most the
 *   close timeout, R73), then stopped (R60, R63): the service stops the actor when the chart says so.
 *
 * Appends are started by entry actions and answered by events (`PLAN_MODE.APPENDED`, ...):
 * see `planMode.effects.ts`. Operations (`SELECT`, `STEP_BOUNDARY`, `REVIEW.OPEN`, `REVIEW.ANSWER`)
 * arrive one at a time, never while a state tagged `appending` is active (docs/spec.md §1); each
 * result is emitted (`PlanModeEmitted`) to the call waiting for it, and so is a review's landing
 * and closing: no result is kept in the context.
 */


const wasTold = (active: boolean) => ({ type: 'wasTold', params: { active } }) as const
const heardSelects = (active: boolean) => ({ type: 'heardSelects', params: { active } }) as const
const takeHeldSelection = (active: boolean) => ({ type: 'takeHeldSelection', params: { active } }) as const
const followSelection = (active: boolean) => ({ type: 'followSelection', params: { active } }) as const
const reportSelection = (outcome: SetOutcome) => ({ type: 'reportSelection', params: { outcome } }) as const
const reportQuietBoundary = (active: boolean) => ({ type: 'reportQuietBoundary', params: { active } }) as const
/** The boundary's answer is told first, from K and the news before `narrate` moves them. */
const narrate = (active: boolean) => [{ type: 'reportNarration', params: { active } } as const, { type: 'narrate', params: { active } } as const]
const refuseReview = (message: string) => ({ type: 'refuseReview', params: { message } }) as const

/** R42's checks 3–5, in order: they come before an open review (6) is even looked at. */
const PLAN_CHECKS = [
  { guard: not('isEffectivelyActive'), actions: refuseReview(REVIEW_MESSAGES.notInPlanMode) },
  { guard: 'lacksLeadingHeading', actions: refuseReview(REVIEW_MESSAGES.noHeading) },
  { guard: 'isPlanTooLarge', actions: refuseReview(REVIEW_MESSAGES.tooLarge) },
] as const

/**
 * How the mode region answers boundaries under F = `active` (R18). An aborted one tells nothing
 * (R15); one with no selection waiting is answered at once; one that flushes P is answered when
 * its append lands (or fails). When the model was already told `active` there is nothing to
 * narrate and K stays, so the quiet boundary every step pays is one microstep (R70).
 */
function boundaryAnswers(active: boolean) {
  return {
    STEP_BOUNDARY: [
      { guard: 'isAborted' as const, actions: reportQuietBoundary(active) },
      { guard: and(['hasNoPendingSelection', wasTold(active), 'hasNoNews']), actions: reportQuietBoundary(active) },
      { guard: 'hasNoPendingSelection' as const, actions: narrate(active) },
      // Else P is flushed first (the intent region): the narration waits for the append, whose
      // landing carries this boundary's handoff (R102).
    ],
    // The boundary's flush landed: F already follows it (the log reported it first), so the mode
    // region answers in the same microstep as the intent region drops P (R16, R18).
    'PLAN_MODE.APPENDED': [
      { guard: and(['isFlushing', wasTold(active), 'hasNoNews']), actions: reportQuietBoundary(active) },
      { guard: 'isFlushing' as const, actions: narrate(active) },
    ],
    // R19: the flush failed; the step runs as logged, and tells nothing: an outcome left to tell
    // outlives that step's header (R81).
    'PLAN_MODE.APPEND_FAILED': [
      { guard: and(['isFlushing', not('hasNoNews')]), target: '.newsOutlivesHeader', actions: reportQuietBoundary(active) },
      { guard: 'isFlushing' as const, actions: reportQuietBoundary(active) },
    ],
    // A request header tells the model F (R30); K already F changes nothing. It also says that a
    // step ran since a durable review closed: the outcome was told there, by whichever writer ran
    // it, unless this chart's own flush failed at that step (R81).
    'LOG.REQUEST_HEADER': [
      { guard: and([not(wasTold(active)), 'hasNoNews']), actions: { type: 'assignTold' as const, params: { active } } },
      { guard: not(wasTold(active)), actions: [{ type: 'assignTold' as const, params: { active } }, 'settleNewsAtHeader' as const] },
      { guard: not('hasNoNews'), actions: 'settleNewsAtHeader' as const },
    ],
  }
}

/**
 * The children of F = `active` (R81, R19): `headerTells`, a step's request header means its
 * boundary told the outcome left to tell; `newsOutlivesHeader`, this chart's flush failed at the
 * step, whose boundary told nothing: its header leaves the outcome to the next boundary, and
 * F changing meanwhile keeps that.
 */
function headerStates(active: boolean) {
  const assignTold = { type: 'assignTold' as const, params: { active } }
  return {
    initial: 'headerTells' as const,
    states: {
      headerTells: {},
      newsOutlivesHeader: {
        on: {
          'LOG.REQUEST_HEADER': [
            { guard: and([not(wasTold(active)), 'hasNoNews']), actions: assignTold },
            { guard: not(wasTold(active)), target: 'headerTells', actions: assignTold },
            { guard: not('hasNoNews'), target: 'headerTells' },
          ],
          'LOG.PLAN_MODE': {
            guard: active ? ('logsInactive' as const) : ('logsActive' as const),
            target: `#planMode.mode.${active ? 'inactive' : 'active'}.newsOutlivesHeader`,
          },
        },
      },
    },
  }
}


/**
 * A pending selection of `active`, waiting for the next step boundary (R9, R12, R16, R19). Its
 * target always differs from F: P goes as soon as the log holds its target, whoever logged it.
 */
function pendingSelection(active: boolean) {
  const logsTarget = active ? ('isLoggedActive' as const) : ('isLoggedInactive' as const)
  const flushFailed = { type: 'warn' as const, params: { message: 'plan-mode: step-boundary flush failed' } }
  return {
    initial: 'queued' as const,
    entry: { type: 'rememberPending' as const, params: { active } },
    states: {
      /** Waits for a boundary. A selection of the same target is a noop; the other one (F) cancels. */
      queued: {
        on: {
          SELECT: [
            { guard: selects(active), actions: reportSelection('noop') },
            // The review closes first and replays this selection afterwards (R48). A pending leave
            // waits under an open review too: another writer may request a durable one (R79, R80).
            { guard: 'canSupersedeReview' as const },
            { target: '#planMode.intent.logged', actions: reportSelection('cancelled') },
          ],
          // R16: another writer logged P's target (it flushed the same selection, R86): nothing is
          // left to flush, and P goes now, as a fresh attach would have none (R64).
          'LOG.PLAN_MODE': { guard: active ? ('logsActive' as const) : ('logsInactive' as const), target: '#planMode.intent.logged' },
          // R86: another writer's logged `/plan` of the other target (F) cancels P; one of P's own
          // target changes nothing.
          'LOG.COMMAND_DONE': [
            { guard: and([heardSelects(!active), 'hasNoOpenReview']), target: '#planMode.intent.logged', actions: 'forgetRun' as const },
            { actions: 'forgetRun' as const },
          ],
          'COMMAND.SELECTED': { guard: and([heardSelects(!active), 'hasNoOpenReview']), target: '#planMode.intent.logged' },
          STEP_BOUNDARY: [
            // R15: an aborted boundary keeps P; the mode region answers it.
            { guard: 'isAborted' as const },
            { target: 'flushing' },
          ],
          // Consent (R47): a pending entry (F inactive) goes; a pending leave (F active) already
          // waits for the boundary, as the consent's own leave would (met only through another
          // writer's durable review, R80).
          ...(active ? { 'REVIEW.APPROVED': { target: '#planMode.intent.logged' } } : {}),
        },
      },
      /** The boundary appends the selection; P is dropped only once it is logged (R16, R17). */
      flushing: {
        tags: [APPENDING_TAG],
        entry: { type: 'appendPlanMode' as const, params: { active } },
        ...whileAppending((heard) => ({
          on: {
            'PLAN_MODE.APPENDED': { target: '#planMode.intent.logged', actions: takeHeldSelection(heard) },
            'PLAN_MODE.APPEND_FAILED': [
              { guard: logsTarget, target: '#planMode.intent.logged', actions: [flushFailed, takeHeldSelection(heard)] },
              { target: `#planMode.intent.pending.${active ? 'entering' : 'leaving'}.queued`, actions: [flushFailed, takeHeldSelection(heard)] },
            ],
          },
        })),
        on: {
          'PLAN_MODE.APPENDED': { target: '#planMode.intent.logged' },
          // R19: contained; P stays for the next boundary and the step runs as logged (R18).
          // Unless the log reached P's target meanwhile (an append a close abandoned landed, R73):
          // P's target never equals F, so it goes (R16, R3).
          'PLAN_MODE.APPEND_FAILED': [
            { guard: logsTarget, target: '#planMode.intent.logged', actions: flushFailed },
            { target: 'queued', actions: flushFailed },
          ],
          ABANDONED: 'queued',
          ...holdsHeardSuccess,
        },
      },
    },
  }
}

/**
 * A review a user's switch to `active` closed (R48): its record is appended, and once it landed
 * (or failed, R49), the review concludes as `recorded` does and the switch follows (`following`).
 * The log may hold another process's record of a durable review first: that one is the outcome.
 */
function supersededBy(active: boolean) {
  const self = `#planMode.review.open.superseded.${active ? 'entering' : 'leaving'}`
  const following = `#planMode.review.following.${active ? 'entering' : 'leaving'}`
  const recordFailed = { type: 'warn' as const, params: { message: 'plan-mode: review record failed' } }
  const adopts = 'replayHeardRequest' as const
  return {
    initial: 'recording' as const,
    states: {
      /** The superseded record is being appended; the log may hold another process's record first (R80). */
      recording: {
        tags: [APPENDING_TAG],
        entry: 'recordReview' as const,
        on: {
          'REVIEW.RECORDED': 'recorded',
          'REVIEW.RECORD_FAILED': { target: 'recorded', actions: recordFailed },
          // Another process closed this review and requested the next one meanwhile (R79, R80).
          'LOG.REVIEW_REQUESTED': { actions: 'noteRequestSeq' as const },
        },
        initial: 'unlogged' as const,
        states: {
          unlogged: { on: OUTRUN_BY_ANOTHER_RECORD },
          logged: { on: AFTER_THE_CLOSING_RECORD },
          outrun: {
            on: {
              ...AFTER_THE_CLOSING_RECORD,
              'REVIEW.RECORDED': `${self}.lost`,
              'REVIEW.RECORD_FAILED': { target: `${self}.lost`, actions: recordFailed },
            },
          },
        },
      },
      /**
       * Transient: the review closed as superseded, then the switch follows; a request another
       * process logged after the record that closed this review is adopted once it has
       * (`following`, R79).
       */
      recorded: {
        always: [
          { guard: 'hasHeardRequest' as const, target: following, actions: ['reportClosed' as const, adopts, 'concludeReview' as const] },
          { target: following, actions: ['reportClosed' as const, 'concludeReview' as const] },
        ],
      },
      /**
       * Transient: another process's record of another outcome closed the review first (R80): it
       * concludes as `open.recorded` does (an approval's consent too, R47), then the switch follows.
       */
      lost: {
        always: [
          {
            guard: 'isToldApproval' as const,
            target: following,
            actions: ['tellApprovalInResult' as const, 'raiseApproval' as const, 'reportLost' as const, 'concludeReview' as const],
          },
          { guard: 'isApproved' as const, target: following, actions: ['raiseApproval' as const, 'reportLost' as const, 'concludeReview' as const] },
          { guard: 'hasHeardRequest' as const, target: following, actions: ['reportLost' as const, adopts, 'concludeReview' as const] },
          { target: following, actions: ['reportLost' as const, 'concludeReview' as const] },
        ],
      },
    },
  }
}

/**
 * While our record of the open durable review is in flight (an answer's or a switch's, from
 * `unlogged`), the first record of it the log holds is the outcome (R80): one of our outcome
 * (ours, the log reporting it before the append resolves, or another process's) leaves it
 * (`logged`); one of another outcome closes the review with it, and ours lost (`outrun`). Later
 * records change nothing.
 */
const OUTRUN_BY_ANOTHER_RECORD = {
  'LOG.REVIEW_CLOSED': [
    { guard: and(['closesThisReview', 'recordsOurOutcome']), target: 'logged' },
    { guard: 'closesThisReview' as const, target: 'outrun', actions: 'adoptOutcome' as const },
  ],
}

/**
 * Once the log holds the record that closed the review (`logged`, `outrun`) and until ours
 * settles: the review concludes as the log reads, so what the log reports after that record
 * comes after it (R64, R80): a `plan/mode` leaves consent nothing to select (R16, R58), a request
 * header means a step told the outcome (R81) and K follows F there (R30).
 */
const AFTER_THE_CLOSING_RECORD = {
  'LOG.PLAN_MODE': { guard: 'flipsLoggedMode' as const, actions: 'notePlanModeAfterClosing' as const },
  'LOG.REQUEST_HEADER': { actions: 'noteHeaderAfterClosing' as const },
}

/**
 * Transient: consent applies, the call resolves (R47); a request the log reported after the
 * record that closed this review is the open review then, as a replay reads it (R79). `report`
 * settles the review's waiters; `'reported'`: the transition in already did (its event held
 * what they settle with).
 */
function concluded(report: 'reportClosed' | 'reportLost' | 'reported') {
  const idle = '#planMode.review.idle'
  const toldInactive = 'tellApprovalInResult' as const
  const reports = report === 'reported' ? [] : [report]
  return {
    always: [
      // Consent: K := inactive (the tool result tells the model), the intent follows (R47).
      { guard: and(['isToldApproval', 'hasHeardRequest']), target: idle, actions: [toldInactive, 'raiseApproval' as const, ...reports, 'replayHeardRequest' as const, 'concludeReview' as const] },
      { guard: 'isToldApproval' as const, target: idle, actions: [toldInactive, 'raiseApproval' as const, ...reports, 'concludeReview' as const] },
      // A durable approval the model has not heard: the next boundary tells it (R81).
      { guard: and(['isApproved', 'hasHeardRequest']), target: idle, actions: ['raiseApproval' as const, ...reports, 'replayHeardRequest' as const, 'concludeReview' as const] },
      { guard: 'isApproved' as const, target: idle, actions: ['raiseApproval' as const, ...reports, 'concludeReview' as const] },
      // Another process requested the next review after the record that closed this one: it is open (R79, R80).
      { guard: 'hasHeardRequest' as const, target: idle, actions: [...reports, 'replayHeardRequest' as const, 'concludeReview' as const] },
      { target: idle, actions: [...reports, 'concludeReview' as const] },
    ],
  }
}

/** An idle selection of `active` being appended now (R10, R11). */
function committingSelection(active: boolean) {
  return {
    tags: [APPENDING_TAG],
    entry: { type: 'appendPlanMode' as const, params: { active } },
    ...whileAppending((heard) => ({
      on: {
        'PLAN_MODE.APPENDED': { target: '#planMode.intent.logged', actions: [reportSelection('committed'), takeHeldSelection(heard)] },
        'PLAN_MODE.APPEND_FAILED': { target: '#planMode.intent.logged', actions: ['reportSelectionFailure' as const, takeHeldSelection(heard)] },
      },
    })),
    on: {
      'PLAN_MODE.APPENDED': { target: '#planMode.intent.logged', actions: reportSelection('committed') },
      'PLAN_MODE.APPEND_FAILED': { target: '#planMode.intent.logged', actions: 'reportSelectionFailure' as const },
      // R73: no longer waited for; the next attachment reads whether it landed.
      ABANDONED: '#planMode.intent.logged',
      ...holdsHeardSuccess,
    },
  }
}

/**
 * R86: a heard `/plan`'s success that comes while this chart's own `plan/mode` append is in flight
 * waits for that append to settle (the latest one only: it replaces one already waiting, whose
 * run is settled) and is then taken. An append a close gave up on (R73: `ABANDONED`) takes none.
 */
const holdsHeardSuccess = {
  'LOG.COMMAND_DONE': [
    { guard: heardSelects(true), target: '.runWaits.entering', actions: 'forgetRun' as const },
    { guard: heardSelects(false), target: '.runWaits.leaving', actions: 'forgetRun' as const },
  ],
}

/**
 * The children of a state whose `plan/mode` append is in flight (R86): `noRunWaits`, or
 * `runWaits.entering`/`runWaits.leaving`, the selection of a heard `/plan` that succeeded
 * meanwhile; `takes(active)` settles the append and takes it (`COMMAND.SELECTED`).
 */
function whileAppending<T>(takes: (active: boolean) => T) {
  return {
    initial: 'noRunWaits' as const,
    states: {
      noRunWaits: {},
      runWaits: { initial: 'entering' as const, states: { entering: takes(true), leaving: takes(false) } },
    },
  }
}

/** The plan-mode statechart of one agent. Attach binds its ports through `context.ports`. */
export const planModeMachine = planModeSetup.createMachine({
  id: 'planMode',
  type: 'parallel',
  // A bare actor (`createActor(planModeMachine, { input: { ports } })`, or none) for tests and
  // inspection; the service restores each agent's actor from its log instead (restore.ts: the
  // context from the fold, then `RESTORE`, whose guarded transitions choose the states).
  context: ({ input }) => {
    const given = input as { ports?: PlanModePorts; closeTimeout?: number; fold?: PlanLogRestore } | undefined
    return initialContext(given?.ports ?? UNATTACHED_PORTS, given?.closeTimeout, given?.fold)
  },
  states: {
    /**
     * F, the logged mode (R2). Only observed `plan/mode` events move it (R3): the service never
     * sets it directly, so the chart always agrees with the log.
     */
    mode: {
      initial: 'inactive',
      states: {
        inactive: {
          ...headerStates(false),
          on: {
            'LOG.PLAN_MODE': { guard: 'logsActive', target: 'active' },
            ...boundaryAnswers(false),
            // R64: attach, from the log (K and the durable reviews are the context it starts with).
            RESTORE: { guard: 'restoresActive', target: 'active' },
          },
        },
        active: {
          ...headerStates(true),
          on: { 'LOG.PLAN_MODE': { guard: 'logsInactive', target: 'inactive' }, ...boundaryAnswers(true) },
        },
      },
    },

    /** Whether a turn is open, from the log alone (R5). Decides queue vs commit (R9, R10). */
    turn: {
      initial: 'idle',
      states: {
        idle: { on: { 'LOG.TURN_START': 'open', RESTORE: { guard: 'restoresOpenTurn', target: 'open' } } },
        open: { on: { 'LOG.TURN_END': 'idle' } },
      },
    },

    /**
     * The plan review (R42–R49). Declared before `intent` so that, for one event, its record
     * is appended before any `plan/mode` (R48: the call fails before the selection follows).
     */
    review: {
      initial: 'idle',
      states: {
        /** No review is open. R42's checks 3–8, in order (1–2 need no state: the tool checks them). */
        idle: {
          on: {
            'REVIEW.OPEN': [
              ...PLAN_CHECKS,
              { guard: 'isOwnedByAnotherAgent', actions: refuseReview(REVIEW_MESSAGES.ownedAgent) },
              // R79: the log is the channel; check 8 does not apply.
              { guard: 'opensDurably', target: 'open.requesting', actions: ['openReview', 'reportOpened'] },
              { guard: 'lacksReviewChannel', actions: refuseReview(REVIEW_MESSAGES.noChannel) },
              { target: 'open', actions: ['openReview', 'reportOpened'] },
            ],
            // Another process opened a durable review: the log holds it open here too (R79).
            'LOG.REVIEW_REQUESTED': { target: 'open.undecided.awaiting', actions: 'adoptReview' },
            'REVIEW.ANSWER': { actions: 'refuseAnswer' },
            // R79: attach: the durable review the log holds open is open again (the context holds it).
            RESTORE: { guard: 'restoresOpenReview', target: 'open.undecided.awaiting' },
          },
        },
        /**
         * The review closed under a user's switch; the selection that closed it is raised now and
         * follows R8–R10 (R48). Until the intent region has taken it, a closing agent waits (R63).
         */
        following: {
          initial: 'entering',
          // A request heard meanwhile (R79) waits behind the selection: it is raised again.
          on: { 'LOG.REVIEW_REQUESTED': { actions: 'heldBehindSelection' } },
          states: {
            entering: { entry: followSelection(true), on: { SELECT: '#planMode.review.idle' } },
            leaving: { entry: followSelection(false), on: { SELECT: '#planMode.review.idle' } },
          },
        },
        /** A review call is in progress: the exit tool's call resolves when this is left. */
        open: {
          initial: 'undecided',
          on: {
            // R42.6: a second call while one is open.
            'REVIEW.OPEN': [...PLAN_CHECKS, { actions: refuseReview(REVIEW_MESSAGES.alreadyOpen) }],
            // R73: its record never settled; the call fails as reloaded.
            ABANDONED: { target: '#planMode.review.idle', actions: ['reportReviewAbandoned', 'abandonReview'] },
            // R80: only an open durable review takes an answer (see `awaiting`).
            'REVIEW.ANSWER': { actions: 'refuseAnswer' },
          },
          states: {
            /**
             * A durable review's request is being appended (R79); the call resolves, submitted,
             * once it landed. A reload waits for it (R60): the review then stays open in the log.
             */
            requesting: {
              tags: [APPENDING_TAG],
              entry: 'requestReview',
              on: {
                'LOG.REVIEW_REQUESTED': { actions: 'noteRequestSeq' },
                'REVIEW.RECORDED': { target: 'undecided.awaiting', actions: ['requestLanded', 'reportLanded'] },
                // With another process's request heard meanwhile, the idle region adopts it (R79).
                'REVIEW.RECORD_FAILED': [
                  { guard: 'hasHeardRequest', target: '#planMode.review.idle', actions: ['replayHeardRequest', 'reportRequestFailed', 'failRequest'] },
                  { target: '#planMode.review.idle', actions: ['reportRequestFailed', 'failRequest'] },
                ],
              },
            },
            /**
             * The outcome is not decided yet. A user switch (R48), the call's abort (R46) or a
             * reload (R60, R63) closes the review here; an answer that comes later is ignored.
             */
            undecided: {
              initial: 'reviewing',
              on: {
                SELECT: [
                  { guard: and([selects(true), not('isEffectivelyActive')]), target: '#planMode.review.open.superseded.entering', actions: 'closeReview' },
                  { guard: and([selects(false), 'isEffectivelyActive']), target: '#planMode.review.open.superseded.leaving', actions: 'closeReview' },
                ],
                'REVIEW.ABORT': { guard: 'isAbortOfThisReview', target: 'recording', actions: 'closeReview' },
              },
              states: {
                /** Waits for the user's answer. Leaving this state aborts the question's signal (R43). */
                reviewing: {
                  invoke: {
                    src: 'askReview',
                    input: ({ context }) => ({ ports: context.ports, plan: context.review?.plan ?? '' }),
                    onDone: { target: 'answered', actions: 'decideReview' },
                  },
                  on: { RELOAD: { target: '#planMode.review.open.recording', actions: 'closeReview' } },
                },
                /**
                 * The user answered while a selection's append was in flight: the answer is
                 * recorded once that append has landed (operations are serialized, §1).
                 */
                answered: {
                  always: { guard: not('isSelectionAppending'), target: '#planMode.review.open.recording' },
                  on: { RELOAD: { target: '#planMode.review.open.recording', actions: 'closeReview' } },
                },
                /**
                 * A durable review: the log holds it open, in every process attached to the log,
                 * until an answer (R80), a user switch (R48) or another process's record closes
                 * it. A reload leaves it open (R79).
                 */
                awaiting: {
                  on: {
                    'REVIEW.ANSWER': { guard: 'answersThisReview', target: '#planMode.review.open.answering', actions: ['decideAnswer', 'reportAnswering'] },
                    'LOG.REVIEW_CLOSED': { guard: 'closesThisReview', target: '#planMode.review.open.recorded', actions: 'adoptOutcome' },
                    'LOG.REVIEW_REQUESTED': { guard: 'requestsAnotherReview', target: 'awaiting', reenter: true, actions: 'adoptReview' },
                  },
                },
              },
            },
            /**
             * A channel review's outcome is decided (answered, aborted or reloaded) and being
             * recorded as `plan/review` (R49); then the call resolves. No other process records a
             * channel review: a durable one's record is `answering` or `superseded`.
             */
            recording: {
              tags: [APPENDING_TAG],
              entry: 'recordReview',
              on: {
                'REVIEW.RECORDED': 'recorded',
                'REVIEW.RECORD_FAILED': {
                  target: 'recorded',
                  actions: { type: 'warn', params: { message: 'plan-mode: review record failed' } },
                },
              },
            },
            /**
             * An answer given through `answerReview` to the open durable review is being recorded
             * (R80); its call waits for the record, then resolves with the review's outcome.
             */
            answering: {
              tags: [APPENDING_TAG],
              entry: 'recordReview',
              on: {
                'REVIEW.RECORDED': 'recorded',
                // Another record of the review is in the log: it closes the review; the answer, its
                // own record failed, fails with the log's error, unwarned (R80).
                'REVIEW.RECORD_FAILED': { target: 'answerFailed', actions: 'reportAnswerOutlived' },
                // Another process closed this review and requested the next one meanwhile (R79, R80).
                'LOG.REVIEW_REQUESTED': { actions: 'noteRequestSeq' },
                // R73: its record never settled; the answer fails with the abandoned message, the call as reloaded.
                ABANDONED: { target: '#planMode.review.idle', actions: ['reportAnswerAbandoned', 'abandonReview'] },
              },
              initial: 'unlogged',
              states: {
                unlogged: {
                  on: {
                    ...OUTRUN_BY_ANOTHER_RECORD,
                    // R80: an answer that could not be recorded changes nothing; the review stays open.
                    'REVIEW.RECORD_FAILED': { target: '#planMode.review.open.undecided.awaiting', actions: ['reportAnswerFailed', 'failAnswer'] },
                  },
                },
                logged: { on: AFTER_THE_CLOSING_RECORD },
                outrun: { on: { ...AFTER_THE_CLOSING_RECORD, 'REVIEW.RECORDED': '#planMode.review.open.lost' } },
              },
            },
            /**
             * Transient: consent applies, the call resolves (R47); a request the log reported after
             * the record that closed this review is the open review then, as a replay reads it (R79).
             */
            recorded: concluded('reportClosed'),
            /** Transient: as `recorded`, after another process's record of another outcome closed the review first: our answer lost (R80). */
            lost: concluded('reportLost'),
            /**
             * Transient: our answer's record failed after another record had closed the review
             * (R80): the answer has failed with the log's error; the review concludes with that record.
             */
            answerFailed: concluded('reported'),
            /**
             * A user's switch closed the review (R48): it is recorded as superseded, then the
             * selection that closed it follows (`following`).
             */
            superseded: {
              initial: 'entering',
              states: { entering: supersededBy(true), leaving: supersededBy(false) },
            },
          },
        },
      },
    },

    /**
     * The user's selection. `logged`: none waits, E = F. `pending.*`: P waits for the next step
     * boundary (an open turn, R9, R12). `committing.*`: an idle selection is being appended
     * (R10). Selections and boundaries arrive only when nothing is `appending`.
     */
    intent: {
      initial: 'logged',
      // R86: runs are noted in every state. A success that finds this chart's own plan/mode append
      // in flight waits for it (`runWaits`, taken when the append settles); any other done here
      // only settles its run.
      on: {
        'LOG.COMMAND_RUN': { actions: 'noteRun' },
        'LOG.COMMAND_DONE': { actions: 'forgetRun' },
      },
      states: {
        logged: {
          on: {
            SELECT: [
              { guard: 'selectsLoggedMode', actions: reportSelection('noop') },
              // The review closes first and replays this selection afterwards (R48).
              { guard: 'canSupersedeReview' },
              { guard: and(['hasOpenTurn', selects(true)]), target: 'pending.entering', actions: reportSelection('queued') },
              { guard: 'hasOpenTurn', target: 'pending.leaving', actions: reportSelection('queued') },
              { guard: selects(true), target: 'committing.entering' },
              { target: 'committing.leaving' },
            ],
            // R64: attach: P, where it differs from F (its entry's pending-store write does not
            // run: restore.ts takes this transition without executing actions).
            RESTORE: [
              { guard: { type: 'restoresPending', params: { active: true } }, target: 'pending.entering' },
              { guard: { type: 'restoresPending', params: { active: false } }, target: 'pending.leaving' },
            ],
            // STEP_BOUNDARY: nothing to resolve; the mode region answers it.
            // Consent while F is active leaves silently at the next boundary (R47).
            'REVIEW.APPROVED': { guard: 'isLoggedActive', target: 'pending.leaving' },
            // R86: another writer's logged `/plan` waits here for the next boundary, as attach
            // would take it (R64); the writer itself already made it (E equals it: nothing).
            'LOG.COMMAND_DONE': [
              { guard: and([heardSelects(true), 'isLoggedInactive', 'hasNoOpenReview']), target: 'pending.entering', actions: 'forgetRun' },
              { guard: and([heardSelects(false), 'isLoggedActive', 'hasNoOpenReview']), target: 'pending.leaving', actions: 'forgetRun' },
              { actions: 'forgetRun' },
            ],
            // The same, for a success held back while this chart's own append was in flight.
            'COMMAND.SELECTED': [
              { guard: and([heardSelects(true), 'isLoggedInactive', 'hasNoOpenReview']), target: 'pending.entering' },
              { guard: and([heardSelects(false), 'isLoggedActive', 'hasNoOpenReview']), target: 'pending.leaving' },
            ],
          },
        },
        committing: {
          // Always entered through an explicit child; XState wants an initial one anyway.
          initial: 'entering',
          states: { entering: committingSelection(true), leaving: committingSelection(false) },
        },
        pending: {
          initial: 'entering',
          exit: 'forgetPending',
          states: { entering: pendingSelection(true), leaving: pendingSelection(false) },
        },
      },
    },

    /**
     * Serving calls, or closing: a reload or detach waits for the work in flight to land (R60,
     * R63), then the actor stops; the agent's next call attaches a new one from the log (R64).
     */
    lifecycle: {
      initial: 'serving',
      states: {
        serving: { on: { RELOAD: 'closing' } },
        closing: {
          always: { guard: 'hasNoWorkInFlight', target: 'stopped' },
          // R73: the wait is bounded; what is still in flight is abandoned, and the actor stops.
          after: { closeTimeout: { target: 'stopped', actions: ['warnAbandoned', 'reportAbandoned', 'raiseAbandoned'] } },
        },
        stopped: { type: 'final' },
      },
    },
  },
})
