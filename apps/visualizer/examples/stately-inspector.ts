import { createInspectorServer } from '@statelyai/inspect/server'
import { createPlanMode } from 'xstate-plan-mode'
import { createPlanModeInspector } from 'xstate-plan-mode/inspect'

/**
 * The same actors in Stately's hosted inspector: `@statelyai/inspect/server` serves
 * http://localhost:<port>, a page that embeds https://stately.ai/inspect and relays to it.
 */
export function createStatelyInspectedPlanMode(section: string, port = 8080) {
  const relay = createInspectorServer({ port, autoOpen: false }) // true opens the browser
  const inspector = createPlanModeInspector({ url: `ws://localhost:${port}` })
  const planMode = createPlanMode({ section, inspect: inspector.inspect })
  return {
    planMode,
    async close() {
      await planMode.dispose()
      await inspector.stop()
      relay.stop()
    },
  }
}
