/**
 * The wire between the visualizer server and its page (`/view` WebSocket). Producers (agents'
 * inspectors) speak the inspection protocol on `/inspect`; the server numbers what it receives
 * and hands it to every page, replaying the history to a page that connects late.
 */
import type { InspectionMessage } from '../../src/adapters/inspect.js'

/** One received inspection message, numbered by the server in arrival order. */
export interface WireItem {
  /** Arrival order, from 1; the timeline's clock. */
  seq: number
  /** Arrival time (ms since the epoch). */
  at: number
  message: InspectionMessage
}

/** The demo commands a page may send (demo mode only; a read-only server ignores them). */
export type DemoCommand = '/plan' | '/plan off' | 'approve' | 'keep-planning'

/** Server → page. */
export type ServerMessage =
  | { kind: 'hello'; demo: boolean }
  | { kind: 'messages'; items: WireItem[] }
  /** The demo agent's latest reply (a command's result text, or what it is doing). */
  | { kind: 'demo-status'; text: string; tone: 'info' | 'error'; reviewOpen: boolean }

/** Page → server. */
export type ViewerMessage = { kind: 'command'; command: DemoCommand; feedback?: string }
