import { createPlanMode, type PlanAgent, type PlanModeOptions } from 'xstate-plan-mode'
import { createPlanModeInspector } from 'xstate-plan-mode/inspect'

/** Plan mode whose agents show live in the visualizer (`node apps/visualizer/cli.mjs`). */
export function createVisiblePlanMode(options: PlanModeOptions, url = 'ws://127.0.0.1:5178/inspect') {
  const inspector = createPlanModeInspector({ url }) // buffers until the visualizer is up
  const planMode = createPlanMode({ ...options, inspect: inspector.inspect })
  return {
    planMode,
    /** Names the agent's chart and puts its session log on the timeline. */
    show: (agent: PlanAgent) => inspector.watch(agent, planMode.actor(agent)),
    /** Disposes plan mode, then closes the socket: nothing is left to keep Node alive. */
    async close() {
      await planMode.dispose()
      await inspector.stop()
    },
  }
}
