/**
 * Notices where the model saw them, for any agent framework.
 *
 * Plan mode hands the host its notices (R32–R34) at the step boundary, right before a step's
 * request. Many frameworks let a host change the messages of one step only: a step hook (the AI
 * SDK's `prepareStep`, a model-input filter, a middleware) returns the step's messages, the
 * framework sends them, and then forgets whatever the hook added. The next step of the same call
 * would no longer show the model its notice, and the call's result would not contain it either.
 *
 * `createCallTranscript` keeps those messages: it records each one at its place among the
 * framework's own messages, puts every one of them back into each later step of the call, and
 * returns the call's new messages with them in place for the host's history. It is generic in the
 * message type and knows nothing of plan mode's decisions: what to send stays the core's
 * (`stepBoundary`); this only remembers where it went.
 */

/** A message a step hook added to a call, and where: before the framework's message at index `at`. */
export interface CallInjection<M> {
  /**
   * The index, among the framework's own messages of the call (its input first, then the messages
   * of the steps so far), of the message the injected one comes before; the length of that list
   * when it comes last.
   */
  readonly at: number
  /** The injected message, in the framework's own message type. */
  readonly message: M
}

/**
 * The messages of one framework call with the messages the host injected at its steps, kept where
 * the model saw them. One per agent loop; a new call starts with `startCall`.
 */
export interface CallTranscript<M> {
  /**
   * Starts a new call whose input (the history the host passes to the framework) has
   * `inputLength` messages, and forgets the previous call's injections.
   * @throws RangeError when `inputLength` is not a non-negative integer.
   */
  startCall(inputLength: number): void
  /**
   * Records `added` as sent with the step whose own messages (as the framework gives them to the
   * step hook: the call's input, then what its steps produced so far) are `stepMessages`, after
   * all of them; returns the step's messages with every message injected during this call in
   * place: what the hook hands the framework for the step. With `added` empty it only puts back
   * the earlier injections. Neither argument is changed.
   */
  inject(stepMessages: readonly M[], added?: readonly M[]): M[]
  /** The injections of the current call, in the order they were made. */
  readonly injections: readonly CallInjection<M>[]
  /**
   * The call's new messages (the framework's response messages: what followed the call's input)
   * with the injected messages where the model saw them: what to append to the host's history.
   */
  transcript(responseMessages: readonly M[]): M[]
}

/**
 * `messages` with each injection placed before the message at its `at` index, or at the end when
 * `at` is at or past the end. Injections must be in order of `at` (as a call makes them); those
 * with the same `at` keep their order. Returns a new array; the arguments are not changed.
 */
export function interleaveInjections<M>(messages: readonly M[], injections: readonly CallInjection<M>[]): M[] {
  const out: M[] = []
  let next = 0
  for (let i = 0; i < messages.length; i++) {
    while (next < injections.length && injections[next]!.at <= i) out.push(injections[next++]!.message)
    out.push(messages[i]!)
  }
  while (next < injections.length) out.push(injections[next++]!.message)
  return out
}

/**
 * Creates the transcript keeper of one agent loop, for a framework whose step hook's added
 * messages last one step. Use it in four places:
 * 1. before each framework call: `startCall(history.length)`;
 * 2. in the step hook, after `planMode.stepBoundary(agent)`:
 *    `return transcript.inject(stepMessages, notices.map(toFrameworkMessage))`;
 * 3. nothing else changes in the step: the framework sends the returned messages;
 * 4. after the call: `history.push(...transcript.transcript(responseMessages))`.
 *
 * It assumes what the AI SDK does: each step's own messages are the call's input followed by
 * everything earlier steps produced, growing by appending.
 */
export function createCallTranscript<M>(): CallTranscript<M> {
  let initial = 0
  let injections: CallInjection<M>[] = []
  return {
    startCall(inputLength) {
      if (!Number.isInteger(inputLength) || inputLength < 0) {
        throw new RangeError(`createCallTranscript: startCall needs a message count; got ${String(inputLength)}`)
      }
      initial = inputLength
      injections = []
    },
    inject(stepMessages, added = []) {
      for (const message of added) injections.push({ at: stepMessages.length, message })
      return interleaveInjections(stepMessages, injections)
    },
    get injections() {
      return injections
    },
    transcript(responseMessages) {
      return interleaveInjections(
        responseMessages,
        injections.map(({ at, message }) => ({ at: at - initial, message })),
      )
    },
  }
}
