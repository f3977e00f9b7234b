/**
 * A host's turn around a call (R5), as the framework adapters' `runTurn` gives it: `turn/start`,
 * the call, then `turn/end` whether the call returned or threw.
 */
export async function runInTurn<T>(start: () => Promise<void>, end: () => Promise<void>, run: () => T | PromiseLike<T>): Promise<Awaited<T>> {
  await start()
  let value: Awaited<T>
  try {
    value = await run()
  } catch (error) {
    await end().catch(() => {}) // the call's error is the one to report
    throw error
  }
  await end()
  return value
}
