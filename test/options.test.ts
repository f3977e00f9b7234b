import { describe, expect, it } from 'vitest'
import { createMemoryCheckpointStore, createPlanMode, type PlanModeOptions } from '../src/index.js'
import { planModeSettings } from '../src/options.js'

const SECTION = 'Plan mode is on.'
const SHAPE = '{ section, review?, decisions?, pendingStore?, checkpoints?, limits?, logger?, inspect? }'

describe('createPlanMode takes one argument of grouped options', () => {
  it('R37: the common case is { section } (or { section, review }); every other option has a default', () => {
    const settings = planModeSettings({ section: SECTION })
    expect(settings).toEqual({
      section: SECTION,
      review: undefined,
      reviews: 'channel',
      decisions: 'approve-or-keep',
      pendingStore: undefined,
      checkpoints: undefined,
      logger: console,
      inspect: undefined,
      closeTimeout: 5000,
      maxAttachedAgents: undefined,
    })
    expect(planModeSettings({ section: SECTION, checkpoints: { store: createMemoryCheckpointStore() } }).checkpoints?.every).toBe(100)
  })

  it('R37: an ungrouped option is an unknown key, refused rather than ignored', () => {
    for (const key of ['reviews', 'closeTimeoutMs', 'maxAttachedAgents', 'checkpointEvery']) {
      expect(() => createPlanMode({ section: SECTION, [key]: 1 } as unknown as PlanModeOptions)).toThrow(
        new Error(`PlanModeOptions has unknown key(s) ${key} — options are ${SHAPE}`),
      )
    }
  })

  it('R76: checkpoints is { store, every? }: a store given bare, another key, or a non-object is refused', () => {
    const store = { load: () => undefined, save: () => {} }
    expect(() => createPlanMode({ section: SECTION, checkpoints: store as never })).toThrow(
      new TypeError('plan mode option checkpoints has unknown key(s) load, save — checkpoints are { store, every? }'),
    )
    expect(() => createPlanMode({ section: SECTION, checkpoints: { store, every: 5, evry: 5 } as never })).toThrow(
      new TypeError('plan mode option checkpoints has unknown key(s) evry — checkpoints are { store, every? }'),
    )
    for (const value of [null, 100, 'store', [store]]) {
      expect(() => createPlanMode({ section: SECTION, checkpoints: value as never })).toThrow(
        new TypeError(`plan mode option checkpoints must be { store, every? }; got ${String(value)}`),
      )
    }
    expect(() => createPlanMode({ section: SECTION, checkpoints: {} as never })).toThrow(
      new TypeError('plan mode option checkpoints.store needs a save(agentId, checkpoint) method'),
    )
  })

  it('R73, R77: limits is { closeTimeoutMs?, maxAttachedAgents? }: another key or a non-object is refused', () => {
    expect(() => createPlanMode({ section: SECTION, limits: { maxAttached: 5 } as never })).toThrow(
      new TypeError('plan mode option limits has unknown key(s) maxAttached — limits are { closeTimeoutMs?, maxAttachedAgents? }'),
    )
    for (const value of [null, 5000, 'none', []]) {
      expect(() => createPlanMode({ section: SECTION, limits: value as never })).toThrow(
        new TypeError(`plan mode option limits must be { closeTimeoutMs?, maxAttachedAgents? }; got ${String(value)}`),
      )
    }
    const settings = planModeSettings({ section: SECTION, limits: { closeTimeoutMs: 0, maxAttachedAgents: 3 } })
    expect([settings.closeTimeout, settings.maxAttachedAgents]).toEqual([0, 3])
  })

  it('R37: after the section and the keys, each option is checked in the order of PlanModeOptions, first failure wins (regression: limits was checked before review, decisions and checkpoints)', () => {
    const REVIEW = "plan mode option review must be a review channel (an object with an ask method) or 'durable'; got 5"
    const DECISIONS = "plan mode option decisions must be 'approve-or-keep' or 'all'; got 5"
    const CHECKPOINTS = 'plan mode option checkpoints must be { store, every? }; got 5'
    const LIMITS = 'plan mode option limits must be { closeTimeoutMs?, maxAttachedAgents? }; got 5'
    const bad = (options: Record<string, unknown>) => () => createPlanMode({ section: SECTION, ...options } as unknown as PlanModeOptions)
    expect(bad({ review: 5, decisions: 5, checkpoints: 5, limits: 5 })).toThrow(new TypeError(REVIEW))
    expect(bad({ decisions: 5, checkpoints: 5, limits: 5 })).toThrow(new TypeError(DECISIONS))
    expect(bad({ checkpoints: 5, limits: 5 })).toThrow(new TypeError(CHECKPOINTS))
    expect(bad({ limits: 5 })).toThrow(new TypeError(LIMITS))
  })

  it("R78: review is a channel or 'durable'; each gives the exit tool its kind", () => {
    const channel = { ask: () => new Promise<never>(() => {}) }
    expect(planModeSettings({ section: SECTION, review: channel })).toMatchObject({ review: channel, reviews: 'channel' })
    expect(planModeSettings({ section: SECTION, review: 'durable' })).toMatchObject({ review: undefined, reviews: 'durable' })
    expect(createPlanMode({ section: SECTION, review: 'durable' }).exitTool.reviews).toBe('durable')
    expect(createPlanMode({ section: SECTION, review: channel }).exitTool.reviews).toBe('channel')
  })
})
