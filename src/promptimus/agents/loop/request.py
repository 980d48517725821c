"""Building one step's request: the system prompt, the agent's preamble and request options, the
step hooks, and images described in text for a model that takes none."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...dto import Message
from ...tools.run_context import RunContext
from ...tools.tool import Tool
from ..image_fallback import described_images, takes_images
from ..step_hooks import StepContext, StepPlan, plan_step
from .active_run import ActiveRun
from .model_call import ModelRequest

__all__ = ["RunOptions", "build_request", "current_options"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What every step of a run starts from: the template variables, the preamble, the request
    options, whether any tool may ask for approval, and the generation of the live tools they
    were built for (see `live_tools`)."""

    variables: dict[str, Any]
    preamble: list[Message]
    params: dict[str, Any]
    approval: bool
    generation: int

    @classmethod
    def build(cls, run: ActiveRun) -> RunOptions:
        agent = run.agent
        variables = agent._variables(run.prompt_vars)
        return cls(
            variables,
            agent._preamble(variables, run.state),
            agent._provider_kwargs(run.state),
            any(tool.may_need_approval for tool in agent._all_tools()),
            agent._live_tools.generation,
        )

    def adapted(self, run: ActiveRun) -> RunOptions:
        """After the agent adapted its state to a rejected request: the same step, resent."""
        agent = run.agent
        return dataclasses.replace(
            self,
            preamble=agent._preamble(self.variables, run.state),
            params=agent._provider_kwargs(run.state),
        )


async def current_options(run: ActiveRun, options: RunOptions) -> RunOptions:
    """`options`, rebuilt if a live tool source (an MCP server) changed the agent's tools: each
    step offers the current list."""
    live = run.agent._live_tools
    if not live.sources:
        return options
    await live.sync(run.agent.tools)
    return options if live.generation == options.generation else RunOptions.build(run)


async def build_request(
    run: ActiveRun, options: RunOptions
) -> tuple[ModelRequest, list[str] | None]:
    """The request of the run's next step and the tool names it offers (None: all). The
    prompt is prepared once per step, however often the step hooks change its variables."""
    index = len(run.record.steps)
    conversation = run.conversation
    record = run.record
    ctx: RunContext[Any] = RunContext(
        deps=run.deps, messages=conversation, step=index, usage=record.usage, record=record
    )
    prepared = await run.prompt.prepare(ctx)
    system, *demos = prepared.render(None, **options.variables)
    history = [*options.preamble, *conversation] if options.preamble else conversation
    step = _Step(system, demos, history, options.params, prepared.template, options.variables)
    offered = None
    if run.agent._step_hooks:
        offered = await _apply_hooks(run, options, step, prepared.render, index)
    if not takes_images(run.llm):
        step.history = described_images(step.history)
    demos, history = step.demos, step.history
    sent = [step.system, *demos, *history] if demos else [step.system, *history]
    return ModelRequest(sent, step.params, step.template, step.variables), offered


@dataclass(slots=True)
class _Step:
    """One step's request as the hooks may change it."""

    system: Message
    demos: list[Message]
    history: list[Message]
    params: dict[str, Any]
    template: str | None
    variables: dict[str, Any]


async def _apply_hooks(
    run: ActiveRun,
    options: RunOptions,
    step: _Step,
    render: Callable[..., list[Message]],
    index: int,
) -> list[str] | None:
    """Run the step hooks and apply their plan to `step`; return the tools offered."""
    agent = run.agent
    plan = await _plan(run, index, step.system)
    if plan.messages is not None:
        step.history = [*options.preamble, *plan.messages]
    active: list[Tool] | None = None
    if plan.active is not None:
        active = [tool for name in plan.active if (tool := agent._tool(name)) is not None]
        step.params = agent._step_provider_kwargs(options.params, active)
    if plan.variables is not None or active is not None:
        step.variables = agent._variables({**run.prompt_vars, **(plan.variables or {})}, active)
    if plan.system is not None:
        step.system = Message(role=step.system.role, content=plan.system)
        step.template = None
    elif step.variables != options.variables:
        step.system, *step.demos = render(None, **step.variables)
    return plan.active


async def _plan(run: ActiveRun, index: int, system: Message) -> StepPlan:
    agent = run.agent
    # copies of the messages too: a hook that edits one in place (to trim it for this step)
    # must not change the run's conversation or what the memory keeps
    messages = [message.model_copy(deep=True) for message in run.conversation]
    ctx: StepContext[Any] = StepContext(
        index, messages, agent.tool_names(), system.content, run.deps, run.record
    )
    return await plan_step(agent._step_hooks, ctx, ctx.tool_names, agent._step_hook_warned)
