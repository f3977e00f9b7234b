import type { PlanModeConfig } from './types.js'

/** The config's keys (R37). */
const CONFIG_KEYS = ['section'] as const

/**
 * Checks a config and returns a new object with `section` kept verbatim (R37, R38).
 * @throws Error, first failure wins: a missing or non-string `section`, a blank one, unknown keys.
 */
export function resolveConfig(config: PlanModeConfig): PlanModeConfig {
  const section = (config as Partial<PlanModeConfig> | null | undefined)?.section
  if (typeof section !== 'string') throw new Error('PlanModeConfig needs a string `section`')
  if (section.trim() === '') throw new Error('PlanModeConfig needs a non-empty `section`')
  // Symbol keys too: any key other than `section` is refused (R37).
  const unknown = Reflect.ownKeys(config).filter((key) => !(CONFIG_KEYS as readonly PropertyKey[]).includes(key))
  if (unknown.length > 0) {
    throw new Error(`PlanModeConfig has unknown key(s) ${unknown.map(String).join(', ')} — config is { section }`)
  }
  return { section }
}
