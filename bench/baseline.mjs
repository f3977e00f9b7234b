/**
 * The baseline: plan mode the way the original harness computed it, re-folding the log on every
 * call (written here from SPEC R2, R5, R30, R16, R32, R7–R10, R21):
 * - `get`: fold the whole log for F (R2), plus the pending selection held in memory;
 * - `section`: E = P's target, or fold again for F;
 * - `set`: one pass for F and the open turn (R5), then queue, cancel or commit;
 * - `stepBoundary`: one pass for F, the open turn and K (the fold at the latest `request/header`
 *   or approved review, R30/R31), then flush P (R16) and narrate (R32).
 * It is generous to the original: the boundary derives all three in a single pass.
 */

const NOTICE_FALLBACK = {
  entering: 'The user switched this session to plan mode.',
  leaving: 'The user switched this session out of plan mode.',
}

/**
 * Creates the re-folding baseline with the same method shapes as the service.
 * @param {{ section: string, foldPlanMode: (events: readonly object[]) => boolean,
 *   noticeTexts?: { entering: string, leaving: string } }} deps `noticeTexts`: the library's
 *   notice texts when it exports them (their length does not matter to the cost)
 * @returns {{ get: Function, section: Function, set: Function, stepBoundary: Function }}
 */
export function createRefoldBaseline({ section, foldPlanMode, noticeTexts = NOTICE_FALLBACK }) {
  /** P per agent id: only selections live in memory; everything else comes from the log. */
  const pending = new Map()
  /** K as last set by a boundary, with the seq it was set at (a later request/header wins). */
  const toldByBoundary = new Map()

  /** One pass: F, the open turn and K as the log tells them. */
  function scan(events) {
    let active = false
    let openTurn = false
    let told = null
    let toldSeq = -Infinity
    for (let i = 0; i < events.length; i++) {
      const event = events[i]
      switch (event.type) {
        case 'plan/mode':
          active = event.data.active
          break
        case 'turn/start':
          openTurn = true
          break
        case 'turn/end':
          openTurn = false
          break
        case 'request/header':
          told = active
          toldSeq = event.seq
          break
        case 'plan/review':
          if (event.data?.outcome === 'approved') {
            told = false
            toldSeq = event.seq
          }
          break
      }
    }
    return { active, openTurn, told, toldSeq }
  }

  function notice(active) {
    const text = active ? noticeTexts.entering : noticeTexts.leaving
    return {
      id: globalThis.crypto.randomUUID(),
      role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: text },
    }
  }

  return {
    get(agent) {
      const active = foldPlanMode(agent.session.events)
      const target = pending.get(agent.id)
      return target === undefined ? { active } : { active, pending: target }
    },

    section(agent) {
      if (agent === undefined) return ''
      return (pending.get(agent.id) ?? foldPlanMode(agent.session.events)) ? section : ''
    },

    async set(agent, active) {
      const { active: logged, openTurn } = scan(agent.session.events)
      const target = pending.get(agent.id)
      if (active === (target ?? logged)) return 'noop'
      if (active === logged) {
        pending.delete(agent.id)
        return 'cancelled'
      }
      if (openTurn) {
        pending.set(agent.id, active)
        return 'queued'
      }
      await agent.session.append('plan/mode', { active })
      pending.delete(agent.id)
      return 'committed'
    },

    async stepBoundary(agent) {
      const events = agent.session.events
      const fold = scan(events)
      let active = fold.active
      const byBoundary = toldByBoundary.get(agent.id)
      const told = byBoundary !== undefined && byBoundary.seq >= fold.toldSeq ? byBoundary.active : fold.told
      const target = pending.get(agent.id)
      if (target !== undefined) {
        if (target !== active) {
          await agent.session.append('plan/mode', { active: target })
          active = target
        }
        pending.delete(agent.id)
      }
      const messages = told !== null && told !== active ? [notice(active)] : []
      toldByBoundary.set(agent.id, { active, seq: events[events.length - 1]?.seq ?? 0 })
      return { section: active ? section : '', messages }
    },
  }
}
