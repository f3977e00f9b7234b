/**
 * The LangGraph.js adapter (`@langchain/langgraph` 1.x, `@langchain/core` 1.x): plan mode inside
 * a `StateGraph`, its session log kept in the graph's own state, so that plan mode's events and
 * the graph's checkpoint commit together (one source of truth, R145).
 *
 * It translates only: every plan decision is the service's (`planMode.step`: the state in force,
 * the section, the notices, the handoff; `exitTool.execute`; `answerReview`; `callReviews.settled`:
 * what a closed review's call results in). This module puts them where LangGraph wants them:
 * - the step boundary: the `plan_boundary` node, before every model call: the section into
 *   `planSection` (the model node puts it after its base system prompt), the state in
 *   force into `planActive`, the notices as `HumanMessage`s into `messages`;
 * - the tools: the `plan_tools` node runs the model's tool calls and answers each with a
 *   `ToolMessage` whose text is the tool's or the core's, status `error` for failures (LangChain's
 *   prebuilt `ToolNode` would rewrite them);
 * - the review: reviews are durable (R78), told in the exit call's result (R81): the `plan_review`
 *   node pauses the run with `interrupt()` and is resumed with `Command({ resume })`, either the
 *   user's answer itself or `{ reviewId }` of a review answered meanwhile (R146, R147);
 * - the log: the `planLog` channel. Inside a node, plan mode's appends are staged and returned
 *   with the node's update, so they are in the graph's checkpoint or nowhere; outside a node (an
 *   answer, a `/plan` from another process) they are written with `graph.updateState` (R145).
 *
 * `@langchain/langgraph` and `@langchain/core` are optional peers, loaded by
 * `createLangGraphPlanMode` (R148).
 *
 * @example
 * const lg = await createLangGraphPlanMode({ planMode, tools: [readFile] })
 * const graph = lg.graph(callModel).compile({ checkpointer }) // plan_boundary → model → plan_tools → plan_review … (R165)
 *
 * @module xstate-plan-mode/langgraph
 */

export * from './langgraph-adapter.js'
