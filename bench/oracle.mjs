/**
 * The oracle: R8–R10 and R16/R32 as tiny pure functions on plain values, the floor that the
 * statechart's cost is compared with (suite `actor`). No log, no promises, no actor.
 */

/**
 * A user selection (R8–R10) within an open turn: the new P.
 * @param {{ F: boolean, P: boolean | null }} state
 * @param {boolean} x
 * @returns {boolean | null} P after the selection
 */
export function oracleSelect({ F, P }, x) {
  if (x === (P ?? F)) return P // noop
  return x === F ? null : x // cancelled or queued
}

/**
 * A step boundary (R16, R32): the state in force, whether `plan/mode` is appended, the notice,
 * and K after it.
 * @param {{ F: boolean, P: boolean | null, K: boolean | null }} state
 * @returns {{ F: boolean, P: null, K: boolean, append: boolean, notice: 'entering' | 'leaving' | null }}
 */
export function oracleStep({ F, P, K }) {
  const append = P !== null && P !== F
  const inForce = P ?? F
  const notice = K !== null && K !== inForce ? (inForce ? 'entering' : 'leaving') : null
  return { F: inForce, P: null, K: inForce, append, notice }
}
