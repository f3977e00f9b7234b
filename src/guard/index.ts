/**
 * `xstate-plan-mode/guard`: the opt-in enforcement layer (R88–R92). The core only guides the model
 * (the `plan:policy` section, R52: it gates no tool); a host that wants a hard line around plan
 * mode adds this guard. It reads the state in force and never writes plan state: its only write is
 * a `plan/violation` record, telemetry for `foldViolations`, `plan-mode inspect` and the
 * visualizer.
 *
 * @module xstate-plan-mode/guard
 */
import { PLAN_VIOLATION_EVENT, type PlanViolationData, type ViolationAction } from '../log/kinds.js'
import type { PlanMode } from '../service.js'
import type { PlanAgent, PlanModeLogger } from '../types.js'
import { isTimeoutMs, MAX_TIMEOUT_MS, waitAtMost } from '../timeouts.js'
import { ownField } from '../untrusted.js'

export { PLAN_VIOLATION_EVENT, type PlanViolationData, type ViolationAction } from '../log/kinds.js'
export { foldViolations, type ViolationCounts, type ViolationEntry, type ViolationFold } from '../log/violations.js'

/** What the guard does with a side-effecting call while plan mode is in force (R89). */
export type GuardAction = 'observe' | 'block'

/** Options of {@link createPlanGuard}. */
export interface PlanGuardOptions {
  /** The service whose state in force the guard reads (it never writes plan state). */
  planMode: PlanMode
  /**
   * `'observe'`: the call runs and a violation is recorded; `'block'`: the call fails with
   * {@link blockedToolMessage} and a violation is recorded. No default: the host chooses.
   */
  action: GuardAction
  /** Where contained faults are reported (R91). Default `console`. */
  logger?: PlanModeLogger
  /**
   * How long a call waits for its violation record's append, in ms (R91): a log that does not
   * settle by then is warned about and the call goes on as decided. Default 5000 (R73's default).
   */
  recordTimeoutMs?: number
}

/** The violation record's bounded wait when the host sets none (R91): R73's default. */
const DEFAULT_RECORD_TIMEOUT_MS = 5000

/** One tool call, as the guard needs to know it. */
export interface GuardedCall {
  /** The tool's name, as the model called it. */
  tool: string
  /** The framework's id of the call (recorded in the violation). */
  callId: string
  /** The host's classification (see {@link isReadOnlyTool}): read-only calls always run. */
  readOnly: boolean
}

/** The guard: wrap each tool call's execution in `run`. */
export interface PlanGuard {
  readonly action: GuardAction
  /**
   * Runs `execute` unless the call must be blocked (R89): a read-only call, `exit_plan_mode`, or
   * any call while the state in force is inactive runs as it is. A side-effecting call while it
   * is active is recorded (`plan/violation`, R90), then run (`observe`) or refused (`block`).
   * @throws (rejects) with `Error(blockedToolMessage(call.tool))` when blocked; else as `execute`.
   */
  run<T>(agent: PlanAgent, call: GuardedCall, execute: () => T | PromiseLike<T>): Promise<Awaited<T>>
  /**
   * The decision alone, for hosts that run the tool themselves (a streaming tool): records the
   * violation, and rejects with the blocked message when the call must not run.
   */
  check(agent: PlanAgent, call: GuardedCall): Promise<void>
}

/** The text a blocked call fails with (R89), which the model receives as the tool's error. */
export function blockedToolMessage(tool: string): string {
  return `${tool} is not available in plan mode; present your plan with exit_plan_mode first.`
}

/**
 * The host's classification of a tool (R88): its own `readOnly` when that is a boolean, else an
 * MCP tool's `annotations.readOnlyHint === true` (an own field of its own `annotations`); every
 * other tool is side-effecting. Only the tool's own fields count, each read once: an inherited
 * `readOnly` (a prototype, a class getter, a polluted `Object.prototype`) does not, and a tool
 * whose fields cannot be read (a throwing getter) is side-effecting.
 */
export function isReadOnlyTool(tool: unknown): boolean {
  try {
    const readOnly = ownField(tool, 'readOnly')
    if (typeof readOnly === 'boolean') return readOnly
    return ownField(ownField(tool, 'annotations'), 'readOnlyHint') === true
  } catch {
    return false
  }
}

/**
 * A copy of `tool` classified read-only (R88): `{ ...tool, readOnly: true }`, typed so that a
 * framework's tool set still accepts it (an object literal with an extra key would not type-check).
 */
export function readOnlyTool<T extends object>(tool: T): T & { readOnly: true } {
  return { ...tool, readOnly: true }
}

const ACTIONS: Readonly<Record<GuardAction, ViolationAction>> = { observe: 'observed', block: 'blocked' }

/**
 * Creates a guard over one service's agents (R88–R91).
 * @throws TypeError `plan guard needs a plan-mode service (createPlanMode)` without `planMode`
 * @throws TypeError `plan guard action must be 'observe' or 'block'; got <JSON>`
 */
export function createPlanGuard(options: PlanGuardOptions): PlanGuard {
  const { planMode, action, recordTimeoutMs = DEFAULT_RECORD_TIMEOUT_MS } = options ?? ({} as PlanGuardOptions)
  if (typeof planMode?.get !== 'function') throw new TypeError('plan guard needs a plan-mode service (createPlanMode)')
  if (action !== 'observe' && action !== 'block') throw new TypeError(`plan guard action must be 'observe' or 'block'; got ${JSON.stringify(action) ?? String(action)}`)
  if (!isTimeoutMs(recordTimeoutMs)) {
    throw new TypeError(`plan guard option recordTimeoutMs must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}; got ${String(recordTimeoutMs)}`)
  }
  const logger = options.logger ?? console
  const exitName = planMode.exitTool.name
  const recorded = ACTIONS[action]

  const warn = (message: string, error: unknown) => {
    try {
      logger.warn(message, error)
    } catch {
      // A logger that throws is ignored (R62).
    }
  }

  /** The state in force (R18: F); when it cannot be read, a blocking guard assumes plan mode (R91). */
  const planModeInForce = (agent: PlanAgent): boolean => {
    try {
      return planMode.get(agent).active
    } catch (error) {
      warn('plan-mode: guard could not read the mode', error)
      return action === 'block'
    }
  }

  const refuseIfBlocking = (tool: string) => {
    if (action === 'block') throw new Error(blockedToolMessage(tool))
  }

  /** The host's classification of the call, read once; one that cannot be read is side-effecting (R88). */
  const isReadOnlyCall = (call: GuardedCall): boolean => {
    try {
      return call.readOnly === true
    } catch {
      return false
    }
  }

  /** The record landed or failed (warned): the call goes on as decided (R91). */
  const afterRecord = (tool: string, failure?: { error: unknown }) => {
    if (failure !== undefined) warn('plan-mode: violation record failed', failure.error)
    refuseIfBlocking(tool)
  }

  /**
   * The decision: `undefined` when the call may run now (a sync log took the record, or nothing
   * needed recording), a promise when the record is on its way; throws when blocked.
   */
  const decide = (agent: PlanAgent, call: GuardedCall): Promise<void> | undefined => {
    // The call, read once: a getter cannot name one tool to the check and another to the record.
    const tool = String(call.tool)
    const callId = String(call.callId)
    if (isReadOnlyCall(call) || tool === exitName || !planModeInForce(agent)) return undefined
    const data: PlanViolationData = { tool, callId, action: recorded }
    // The log's answer is untrusted (R62): its `then` is read once, and a read or a call that
    // throws is a failed record, never the call's failure.
    let appended: unknown
    let then: unknown
    try {
      appended = agent.session.append(PLAN_VIOLATION_EVENT, data)
      then = (appended as { then?: unknown } | null | undefined)?.then
    } catch (error) {
      afterRecord(tool, { error })
      return undefined
    }
    // A memory or file log answers at once: no promise hop on the tool's path (R89's cost, §11).
    if (typeof then !== 'function') {
      afterRecord(tool)
      return undefined
    }
    let failure: { error: unknown } | undefined
    const landing = new Promise<void>((resolve) => {
      const failed = (error: unknown) => resolve(void (failure = { error }))
      try {
        ;(then as PromiseLike<unknown>['then']).call(appended, () => resolve(), failed)
      } catch (error) {
        failed(error) // a `then` that throws is a failed record
      }
    })
    // R91: bounded like R73: a log that never settles does not hold the call forever, and one that
    // lands (or fails) after the bound expired is not reported a second time.
    return waitAtMost(recordTimeoutMs, landing).then((settled) =>
      afterRecord(tool, settled ? failure : { error: new Error(`the plan/violation record did not settle within ${recordTimeoutMs} ms`) }),
    )
  }

  return {
    action,
    async check(agent, call) {
      await decide(agent, call)
    },
    run<T>(agent: PlanAgent, call: GuardedCall, execute: () => T | PromiseLike<T>): Promise<Awaited<T>> {
      try {
        const recording = decide(agent, call)
        return (recording === undefined ? Promise.resolve(execute()) : recording.then(execute)) as Promise<Awaited<T>>
      } catch (error) {
        return Promise.reject(error)
      }
    },
  }
}
