#!/usr/bin/env node
/**
 * The `plan-mode` executable: runs `main` on the process's arguments.
 *
 * Stopping (R108): a command that holds something to close (`chat`, `demo`, `visualize`) takes
 * SIGTERM, and Ctrl-C (SIGINT) unless it took Ctrl-C for itself (`chat` stops its running turn
 * with it), through `io.signal`: it closes and exits with its own code, or 128 + the signal's
 * number when the stop cut its work short. One that has not closed within its grace after the
 * stop (`PLAN_MODE_STOP_GRACE_MS`, default 500 ms: `stopGraceMs`), or that is stopped a second
 * time, is ended with 128 + the signal's number. Any other command
 * (`inspect`) holds nothing to close: the signals keep their default action, which ends it at
 * once, whatever it is doing.
 */
import { constants } from 'node:os'
import { CliStopped, DEFAULT_STOP_GRACE_MS, closesOnStop, main, stopGraceMs } from './main.js'

const argv = process.argv.slice(2)
const takesSignals = closesOnStop(argv)
/** How long a stopped command may take to close. A bad value is `main`'s to refuse (exit 2) before anything starts. */
const graceMs = (() => {
  try {
    return stopGraceMs(process.env)
  } catch {
    return DEFAULT_STOP_GRACE_MS
  }
})()
const controller = new AbortController()
const interruptListeners = new Set<() => void>()
let stopping = false
const stop = (signal: 'SIGINT' | 'SIGTERM') => {
  const code = 128 + constants.signals[signal]
  // A second stop does not wait for a graceful close.
  if (stopping) process.exit(code)
  stopping = true
  controller.abort(new CliStopped(signal))
  // Nothing may keep a stopped process: a close that waits on a port, a read blocked in the kernel.
  setTimeout(() => process.exit(code), graceMs).unref()
}
const interrupt = () => {
  if (interruptListeners.size === 0) return stop('SIGINT')
  for (const listener of [...interruptListeners]) listener()
}
const terminate = () => stop('SIGTERM')
if (takesSignals) {
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', terminate)
}

const code = await main(argv, {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  signal: controller.signal,
  onInterrupt(listener) {
    interruptListeners.add(listener)
    return () => void interruptListeners.delete(listener)
  },
})
// Stopped: the command has closed what it could; a handle it could not close must not keep the process.
if (stopping) process.exit(code)
process.exitCode = code
if (takesSignals) {
  process.off('SIGINT', interrupt)
  process.off('SIGTERM', terminate)
}
