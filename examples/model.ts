import type { ExitPlanModeTool } from 'xstate-plan-mode'

/** The smallest model interface the README example needs: one request in, one reply out. */
export type Model = (request: { system: string; messages: string[]; tools: ExitPlanModeTool[] }) => Promise<{
  text: string
  toolCall?: { name: string; args: unknown }
}>
