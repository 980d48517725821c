"""The agent run loop, split by phase (`BaseAgent` drives it; native and ReACT agents alike).

One run, in the order its phases happen:

- `active_run`: what one run holds while it goes (conversation, what the memory gains, the
  steps used, the record) and the events it shows a stream.
- `request`: building one step's request: the system prompt (`BasePrompt.prepare`, once per
  step), the agent's preamble and request options, the step hooks, images for text-only models.
- `model_call`: calling the model, one path whether the run streams or not.
- `tool_calls`: running a reply's tool calls (concurrently, bounded, in request order).
- `approvals`: screening calls that need a person's approval, pausing, and resuming.
- `run`: the loop itself, which hands each reply to the agent's `_interpret` and acts on the
  decision (`decisions`), and commits the memory when the run succeeds.

The three things a run does to the world (one model request, one tool call, one memory commit)
go through `agent.executor` (`executor.RunExecutor`): a wrapper that replaces it sees each one
through one seam, without copying the loop. `agent.LoopAgent` is what the loop asks of an agent.
"""
