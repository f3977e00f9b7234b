import { describe, expect, it } from 'vitest'
import { createActor, type AnyStateNode, type StateValue } from 'xstate'
import { planModeMachine } from '../src/machines/planMode.machine.js'
import { EFFECTIVELY_ACTIVE } from '../src/machines/planMode.setup.js'
import { isEffectivelyActive, type PlanModeSnapshot } from '../src/machines/planMode.view.js'

/** Every leaf state value of a region (one per atomic state; a parallel child takes its first leaves). */
function leafValues(node: AnyStateNode): StateValue[] {
  const children = Object.values(node.states) as AnyStateNode[]
  if (children.length === 0) return []
  if (node.type === 'parallel') {
    const value: Record<string, StateValue> = {}
    for (const child of children) value[child.key] = leafValues(child)[0] ?? {}
    return [value]
  }
  return children.flatMap((child): StateValue[] => {
    const below = leafValues(child)
    return below.length === 0 ? [child.key] : below.map((value) => ({ [child.key]: value }))
  })
}

describe('the chart view read from the state value', () => {
  it('R7, R21: isEffectivelyActive says what EFFECTIVELY_ACTIVE says, for every mode and intent configuration', () => {
    const bare = createActor(planModeMachine).start()
    const { context, value } = bare.getSnapshot()
    bare.stop()
    const region = (key: string) => planModeMachine.root.states[key]!
    let checked = 0
    for (const mode of leafValues(region('mode'))) {
      for (const intent of leafValues(region('intent'))) {
        const snapshot = planModeMachine.resolveState({ value: { ...(value as object), mode, intent }, context }) as PlanModeSnapshot
        const expected = EFFECTIVELY_ACTIVE.some((v) => snapshot.matches(v))
        expect(isEffectivelyActive(snapshot), JSON.stringify(snapshot.value)).toBe(expected)
        checked++
      }
    }
    // 4 mode leaves (inactive/active × headerTells/newsOutlivesHeader) × the intent leaves.
    expect(checked).toBeGreaterThanOrEqual(4 * 6)
  })
})
