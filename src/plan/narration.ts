import type { NoticeKind } from '../machines/planMode.events.js'
import type { UserMessage } from '../types.js'

/** What the model is told when the user switched the mode since its last request (R33). */
export const NOTICE_TEXTS: Readonly<Record<NoticeKind, string>> = {
  entering: 'The user switched this session to plan mode.',
  leaving: 'The user switched this session back to the default mode.',
}

/** A notice as a user message with a fresh id (R34). */
export function createNotice(kind: NoticeKind): UserMessage {
  return createNarration(NOTICE_TEXTS[kind])
}

/** Any text plan mode tells the model at a boundary (a notice, a review's outcome: R34, R81) as a user message. */
export function createNarration(text: string): UserMessage {
  return {
    id: globalThis.crypto.randomUUID(),
    role: 'user',
    content: [{ type: 'text', text }],
    source: { kind: 'plugin', plugin: 'plan-mode', form: 'notice', summary: text },
  }
}
