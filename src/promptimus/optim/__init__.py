"""Train a module's prompts: `fit` with the `Reflective` or `FewShot` optimizer.

    from promptimus.optim import Reflective, fit
    result = await fit(agent, trainset, metric, optimizer=Reflective(teacher=llm), budget=200,
                       checkpoint_dir="runs/1")

What trains: every text `Parameter` that is set and not frozen (`frozen=True` or
`requires_grad=False` leaves one alone). Several objectives (score, `Cost`, `Latency`,
`Tokens`) give `TrainResult.frontier`, chosen from by `Weighted` or `BestUnder`. Not imported
by `import promptimus`.
"""

from .budget import Budget
from .counted_evaluation import Evaluation
from .few_shot import FewShot
from .fit import Optimizer, TrainResult, fit
from .frontier import FrontierPoint
from .objectives import Cost, Latency, Objective, Tokens
from .pareto import ParetoFront
from .proposer import DEFAULT_META_PROMPT, ProposalRequest, TeacherProposer, extract_value
from .reflective import Candidate, Reflective
from .run_state import TrainState
from .selection import BestUnder, SelectionRule, Weighted
from .template_check import template_break
from .trainable import trainable_parameters

__all__ = [
    "DEFAULT_META_PROMPT",
    "BestUnder",
    "Budget",
    "Candidate",
    "Cost",
    "Evaluation",
    "FewShot",
    "FrontierPoint",
    "Latency",
    "Objective",
    "Optimizer",
    "ParetoFront",
    "ProposalRequest",
    "Reflective",
    "SelectionRule",
    "TeacherProposer",
    "Tokens",
    "TrainResult",
    "TrainState",
    "Weighted",
    "extract_value",
    "fit",
    "template_break",
    "trainable_parameters",
]
