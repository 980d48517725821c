"""Run `evaluate` and `fit` on a Ray cluster: `RayRunner`.

    from promptimus.distributed import RayRunner
    report = await evaluate(agent, data, metric, runner=RayRunner(num_workers=8, setup=attach))

Needs `pip install 'promptimus[ray]'`. Ray is imported when a runner first prepares, never by
`import promptimus` or by this package.
"""

from .ray_runner import RayRunner, Setup

__all__ = ["RayRunner", "Setup"]
