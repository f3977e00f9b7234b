import { createCallTranscript, type PlanAgent, type PlanMode } from 'xstate-plan-mode'

type Message = { role: 'user' | 'assistant' | 'tool'; content: string }

/** Plan mode for a framework whose step hook changes one step's messages only: the next step forgets them. */
export function createPlanModeHooks(planMode: PlanMode, agent: PlanAgent, base: string) {
  const transcript = createCallTranscript<Message>()
  return {
    /** Before each framework call, given the history the call starts from. */
    startCall: (history: readonly Message[]) => transcript.startCall(history.length),
    /** The framework's step hook, given the step's messages (the call's input, then what its steps added). */
    async beforeStep(messages: readonly Message[]) {
      const boundary = await planMode.stepBoundary(agent)
      await agent.session.append('request/header', {})
      const notices = boundary.messages.map((notice): Message => ({ role: 'user', content: textOf(notice.content) }))
      return {
        system: boundary.section === '' ? base : `${base}\n\n${boundary.section}`,
        messages: transcript.inject(messages, notices), // this step's notices, and every earlier one of the call
      }
    },
    /** After the call: its new messages with the notices where the model saw them, for the history. */
    afterCall: (newMessages: readonly Message[]) => transcript.transcript(newMessages),
  }
}

const textOf = (content: unknown[]) => content.map((part) => (part as { text?: string }).text ?? '').join('')
