/** A plan-policy section: the system-prompt text plan mode sends while it is on (`createPlanMode({ section })`). */
export const PLAN_SECTION = `Plan mode is on: the user wants to review a plan before anything is changed.
- Explore and design only: read, search, and ask the user questions. Change nothing: do not edit
  files, do not run commands that modify anything, do not carry out the task yet.
- When the plan is complete, call exit_plan_mode with the whole plan as markdown, starting with
  a heading that names it. Present the plan only through that tool.
- If the user keeps planning, the tool result carries their feedback: revise the plan and call
  exit_plan_mode again with the complete new version.`
